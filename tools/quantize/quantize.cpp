// tools/quantize/quantize.cpp: float routed experts to a published recipe (see quantize.h).
#include "tools/quantize/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "base/check.h"
#include "base/thread_pool.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/validate.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"
#include "tools/imatrix/imatrix.h"
#include "tools/model_io/model_io.h"

namespace ds4::quantize {
namespace {

bool float_type(gguf::GgufType t) {
  return t == gguf::GgufType::kF32 || t == gguf::GgufType::kF16 || t == gguf::GgufType::kBF16;
}

// A routed expert tensor of the shape: the type it gets (the recipe's, and for the last q4_last
// layers the q4 recipe's), its layer, and whether it is the down projection.
struct ExpertTensor {
  gguf::GgufType type;
  int layer;
  bool down;
};

std::unordered_map<std::string, ExpertTensor> expert_tensors(const model::Shape& shape,
                                                             const QuantizeOptions& o) {
  std::unordered_map<std::string, ExpertTensor> out;
  const auto main = model::model_tensors(shape, o.recipe);
  const auto q4 = model::model_tensors(shape, model::Recipe::kQ4);
  for (size_t i = 0; i < main.size(); ++i) {
    if (main[i].role != model::TensorRole::kRoutedExpert) continue;
    const bool late = main[i].layer >= shape.n_layer - o.q4_last;
    DS4_CHECK(q4[i].name == main[i].name);
    out.emplace(main[i].name,
                ExpertTensor{late ? q4[i].type : main[i].type, main[i].layer,
                             main[i].name.find("ffn_down_exps") != std::string::npos});
  }
  return out;
}

// One expert stack [cols, rows, n_expert]: each expert's rows decoded to float and encoded to
// et.type, one expert at a time, rows split over the pool.
Status quantize_experts(const gguf::Reader& file, const gguf::TensorInfo& t, const ExpertTensor& et,
                        const imatrix::Imatrix* im, gguf::Writer& out, size_t index,
                        base::ThreadPool& pool) {
  const gguf::GgufType to = et.type;
  const int64_t cols = static_cast<int64_t>(t.dims[0]);
  const int64_t rows = static_cast<int64_t>(t.dims.size() > 1 ? t.dims[1] : 1);
  const int64_t n_mat = static_cast<int64_t>(t.dims.size() > 2 ? t.dims[2] : 1);
  const auto in_row = gguf::byte_size(t.type, static_cast<uint64_t>(cols));
  const auto out_row = gguf::byte_size(to, static_cast<uint64_t>(cols));
  if (!in_row || !out_row) {
    return Status::invalid_model("'%s': rows of %lld values are not whole %s blocks",
                                 t.name.c_str(), static_cast<long long>(cols),
                                 std::string(gguf::to_string(to)).c_str());
  }
  const std::span<const uint8_t> data = file.tensor_data(t);
  std::vector<float> x(static_cast<size_t>(rows * cols));
  std::vector<uint8_t> packed(static_cast<size_t>(rows) * *out_row);
  for (int64_t e = 0; e < n_mat; ++e) {
    const uint8_t* src = data.data() + static_cast<uint64_t>(e * rows) * *in_row;
    const int64_t tasks = std::min<int64_t>(rows, 4 * static_cast<int64_t>(pool.size()));
    std::vector<Status> errors(static_cast<size_t>(tasks));
    pool.parallel_for(tasks, [&](int64_t k) {
      const int64_t a = rows * k / tasks, b = rows * (k + 1) / tasks;
      for (int64_t r = a; r < b; ++r) {
        float* row = x.data() + r * cols;
        Status s = quant::dequantize(t.type, src + static_cast<uint64_t>(r) * *in_row, row, cols);
        for (int64_t c = 0; s.is_ok() && c < cols; ++c) {
          if (!std::isfinite(row[c])) {
            s = Status::invalid_model("'%s' has a non-finite value (expert %lld, row %lld)",
                                      t.name.c_str(), static_cast<long long>(e),
                                      static_cast<long long>(r));
          }
        }
        if (!s.is_ok()) {
          errors[static_cast<size_t>(k)] = s;
          return;
        }
      }
    });
    for (const Status& s : errors) DS4_TRY(s);
    const std::optional<std::vector<float>> weights =
        im != nullptr ? im->importance(et.layer, static_cast<int>(e), et.down) : std::nullopt;
    DS4_TRY(quant::quantize_rows(to, x.data(), packed.data(), rows, cols,
                                 weights ? weights->data() : nullptr, &pool)
                .with_context(t.name));
    DS4_TRY(out.write_tensor_data(index, packed, static_cast<uint64_t>(e * rows) * *out_row));
    file.release({src, static_cast<size_t>(rows) * *in_row});  // read once: let it go
  }
  return Status::ok();
}

}  // namespace

Status quantize_model(const QuantizeOptions& opts, QuantizeReport* report) {
  if (opts.recipe != model::Recipe::kQ2 && opts.recipe != model::Recipe::kQ4 &&
      opts.recipe != model::Recipe::kQ8) {
    return Status::invalid_argument("recipe %s: quantize writes q2, q4 or q8 experts",
                                    std::string(model::to_string(opts.recipe)).c_str());
  }
  if (opts.q4_last != 0 && opts.recipe != model::Recipe::kQ2) {
    return Status::invalid_argument("--q4-last goes with the q2 recipe");
  }
  DS4_ASSIGN_OR_RETURN(const gguf::Reader file, gguf::Reader::open(opts.input));
  DS4_ASSIGN_OR_RETURN(const model::FileCheck check,
                       model_io::check_main_model(file, opts.input, "quantize"));
  if (opts.q4_last < 0 || opts.q4_last > check.shape.n_layer) {
    return Status::invalid_argument("--q4-last %d: the model has %d layers", opts.q4_last,
                                    check.shape.n_layer);
  }
  if (model_io::same_file(opts.input, opts.output)) {
    return Status::invalid_argument("the output '%s' is the input file", opts.output.c_str());
  }
  std::optional<imatrix::Imatrix> im;
  if (!opts.imatrix.empty()) {
    DS4_ASSIGN_OR_RETURN(im, imatrix::read_imatrix(opts.imatrix, check.shape));
  }
  const auto experts = expert_tensors(check.shape, opts);
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (experts.contains(t.name) && !float_type(t.type)) {
      return Status::invalid_argument(
          "'%s' is already quantized (%s): quantize needs F32, F16 or BF16 experts (a file "
          "synthesized or converted with --quant f32 or f16)",
          t.name.c_str(), std::string(gguf::to_string(t.type)).c_str());
    }
  }

  DS4_ASSIGN_OR_RETURN(gguf::Writer out, gguf::Writer::create(opts.output, file.alignment()));
  for (const gguf::KeyValue& kv : file.metadata()) {
    if (kv.key == "general.alignment") continue;  // the writer records the same value
    DS4_TRY(out.add_metadata(kv.key, kv.value));
  }
  // Each input tensor's expert record; null: copied unchanged.
  std::vector<const ExpertTensor*> plan;
  for (const gguf::TensorInfo& t : file.tensors()) {
    const auto it = experts.find(t.name);
    plan.push_back(it != experts.end() ? &it->second : nullptr);
    DS4_TRY(out.add_tensor(t.name, plan.back() ? plan.back()->type : t.type, t.dims).status());
  }
  DS4_TRY(out.write_header());
  base::ThreadPool pool(opts.threads);
  size_t quantized = 0;
  for (size_t i = 0; i < file.tensors().size(); ++i) {
    const gguf::TensorInfo& t = file.tensors()[i];
    if (const ExpertTensor* x = plan[i]) {
      if (opts.progress) {
        std::fprintf(stderr, "quantize: %s %s -> %s\n", t.name.c_str(),
                     std::string(gguf::to_string(t.type)).c_str(),
                     std::string(gguf::to_string(x->type)).c_str());
      }
      DS4_TRY(quantize_experts(file, t, *x, im ? &*im : nullptr, out, i, pool));
      ++quantized;
      continue;
    }
    DS4_TRY(model_io::copy_tensor(file, t, out, i));
  }
  const uint64_t bytes = out.file_size();
  DS4_TRY(out.finish());
  if (report != nullptr) {
    report->tensors = plan.size();
    report->quantized = quantized;
    report->bytes = bytes;
  }
  return Status::ok();
}

}  // namespace ds4::quantize
