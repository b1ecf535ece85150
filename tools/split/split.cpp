// tools/split/split.cpp: slice files (see split.h).
#include "tools/split/split.h"

#include <algorithm>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <unordered_map>

#include "base/check.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/fingerprint.h"
#include "model/inventory.h"
#include "model/slice_file.h"
#include "model/validate.h"
#include "tools/model_io/model_io.h"

namespace ds4::split {

Status write_slice_file(const std::string& input, const std::string& output,
                        const LayerSlice& layers, SplitReport* report) {
  DS4_ASSIGN_OR_RETURN(const gguf::Reader file, gguf::Reader::open(input));
  DS4_ASSIGN_OR_RETURN(const model::FileCheck check,
                       model_io::check_main_model(file, input, "split"));
  DS4_ASSIGN_OR_RETURN(const model::LayerRange range,
                       model::resolve_layer_slice(layers, check.shape));
  if (check.slice && !model::range_contains(check.slice->range, range)) {
    return Status::invalid_argument(
        "'%s' is a slice file holding layers %s only: layers %s are not "
        "in it",
        input.c_str(), model::range_name(check.slice->range).c_str(),
        model::range_name(range).c_str());
  }
  if (model_io::same_file(input, output)) {
    return Status::invalid_argument("the output '%s' is the input file", output.c_str());
  }

  DS4_ASSIGN_OR_RETURN(gguf::Writer out, gguf::Writer::create(output, file.alignment()));
  // Every key of the input as it is, but general.alignment (the writer records the same value)
  // and an input slice file's own slice keys, which the new ones replace.
  for (const gguf::KeyValue& kv : file.metadata()) {
    if (kv.key == "general.alignment" ||
        std::string_view(kv.key).starts_with(model::kSliceKeyPrefix))
      continue;
    DS4_TRY(out.add_metadata(kv.key, kv.value));
  }
  const model::SliceMark mark{range, model::model_fingerprint(file)};
  for (auto& [key, value] : model::slice_metadata(mark))
    DS4_TRY(out.add_metadata(std::move(key), std::move(value)));

  // The tensors the range holds (model::range_holds), in the input's order.
  std::unordered_map<std::string, bool> wanted;
  for (const model::TensorSpec& spec : model::model_tensors(check.shape, model::Recipe::kQ2))
    wanted.emplace(spec.name, model::range_holds(range, spec));
  std::vector<const gguf::TensorInfo*> kept;
  for (const gguf::TensorInfo& t : file.tensors()) {
    const auto it = wanted.find(t.name);
    if (it == wanted.end() || !it->second) continue;
    DS4_ASSIGN_OR_RETURN(const size_t index, out.add_tensor(t.name, t.type, t.dims));
    DS4_CHECK(index == kept.size());
    kept.push_back(&t);
  }
  DS4_TRY(out.write_header());
  for (size_t i = 0; i < kept.size(); ++i) DS4_TRY(model_io::copy_tensor(file, *kept[i], out, i));
  const uint64_t bytes = out.file_size();
  DS4_TRY(out.finish());
  if (report != nullptr) {
    report->range = range;
    report->tensors = kept.size();
    report->bytes = bytes;
    report->fingerprint = mark.fingerprint;
  }
  return Status::ok();
}

}  // namespace ds4::split
