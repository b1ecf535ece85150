// tools/splice/splice.cpp: whole model files from slices or from two files' layers (splice.h).
#include "tools/splice/splice.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <unordered_set>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/hparams.h"
#include "model/inventory.h"
#include "model/slice_file.h"
#include "model/validate.h"
#include "tools/model_io/model_io.h"

namespace ds4::splice {
namespace {

struct Source {
  size_t input;
  const gguf::TensorInfo* info;
};

}  // namespace

Status splice_files(const std::vector<std::string>& inputs, const std::string& output,
                    SpliceReport* report) {
  if (inputs.size() < 2) return Status::invalid_argument("splice needs two input files or more");
  std::vector<gguf::Reader> files;
  std::optional<model::Shape> shape;
  for (const std::string& path : inputs) {
    if (model_io::same_file(path, output)) {
      return Status::invalid_argument("the output '%s' is an input file", output.c_str());
    }
    DS4_ASSIGN_OR_RETURN(gguf::Reader file, gguf::Reader::open(path));
    DS4_ASSIGN_OR_RETURN(const model::FileCheck check,
                         model_io::check_main_model(file, path, "splice"));
    if (!shape) {
      shape = check.shape;
    } else if (model::shape_metadata(*shape) != model::shape_metadata(check.shape)) {
      return Status::invalid_argument("'%s' is of shape %.*s, '%s' of %.*s: splice one shape",
                                      inputs.front().c_str(), int(shape->name.size()),
                                      shape->name.data(), path.c_str(),
                                      int(check.shape.name.size()), check.shape.name.data());
    }
    files.push_back(std::move(file));
  }

  // Each tensor from the last input that holds it; the inventory's order, then other tensors in
  // the order first met.
  const std::vector<model::TensorSpec> specs = model::model_tensors(*shape, model::Recipe::kQ2);
  std::unordered_map<std::string, Source> source;
  std::vector<std::string> order;
  std::unordered_set<std::string> listed;
  for (const model::TensorSpec& spec : specs) {
    order.push_back(spec.name);
    listed.insert(spec.name);
  }
  for (size_t i = 0; i < files.size(); ++i) {
    for (const gguf::TensorInfo& t : files[i].tensors()) {
      if (listed.insert(t.name).second) order.push_back(t.name);
      source[t.name] = {i, &t};
    }
  }
  for (const model::TensorSpec& spec : specs) {
    if (spec.presence == model::Presence::kRequired && !source.contains(spec.name)) {
      return Status::invalid_argument("no input holds '%s': the inputs do not make a whole model",
                                      spec.name.c_str());
    }
  }
  std::erase_if(order, [&](const std::string& name) { return !source.contains(name); });

  // Written beside the output and checked before it takes the output's name (an existing file
  // stays as it is when the check fails).
  const std::string staged = output + ".splice";

  DS4_ASSIGN_OR_RETURN(gguf::Writer out, gguf::Writer::create(staged, files[0].alignment()));
  for (const gguf::KeyValue& kv : files[0].metadata()) {
    if (kv.key == "general.alignment" ||
        std::string_view(kv.key).starts_with(model::kSliceKeyPrefix))
      continue;
    DS4_TRY(out.add_metadata(kv.key, kv.value));
  }
  std::vector<size_t> from(files.size(), 0);
  for (const std::string& name : order) {
    const Source& s = source.at(name);
    DS4_TRY(out.add_tensor(name, s.info->type, s.info->dims).status());
    ++from[s.input];
  }
  DS4_TRY(out.write_header());
  for (size_t k = 0; k < order.size(); ++k) {
    const Source& s = source.at(order[k]);
    DS4_TRY(model_io::copy_tensor(files[s.input], *s.info, out, k));
  }
  const uint64_t bytes = out.file_size();
  DS4_TRY(out.finish());
  // The check of the file just written: gate and up experts of one layer from two files of
  // different types, say.
  std::error_code ec;
  const auto written = gguf::Reader::open(staged);
  if (!written.is_ok()) {
    std::filesystem::remove(staged, ec);
    return written.status();
  }
  const model::FileCheck check = model::check_model_file(*written);
  if (!check.problems.empty()) {
    std::filesystem::remove(staged, ec);
    return Status::invalid_argument("the spliced file would not be a valid model: %s",
                                    check.problems.front().c_str());
  }
  std::filesystem::rename(staged, output, ec);
  if (ec) {
    std::filesystem::remove(staged, ec);
    return Status::io_error("cannot rename the spliced file to '%s'", output.c_str());
  }
  if (report != nullptr) {
    report->tensors = order.size();
    report->bytes = bytes;
    report->from = std::move(from);
  }
  return Status::ok();
}

}  // namespace ds4::splice
