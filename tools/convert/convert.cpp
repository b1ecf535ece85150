// tools/convert/convert.cpp: the streaming conversion driver.
#include "tools/convert/convert.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/read_file.h"
#include "base/thread_pool.h"
#include "gguf/writer.h"
#include "model/hparams.h"
#include "quant/quantize.h"
#include "tools/convert/name_map.h"
#include "tools/convert/numeric.h"
#include "tools/convert/safetensors.h"
#include "tools/convert/tokenizer_keys.h"
#include "tools/imatrix/imatrix.h"

namespace ds4::convert {
namespace {

// Floats decoded per chunk (64 MB): bounds memory whatever the tensor's size.
constexpr int64_t kChunkFloats = int64_t{16} << 20;

struct ResolvedSegment {
  SourceMatrix src;
  int64_t row0 = 0;
  int64_t n_rows = 0;
};

struct Job {
  const model::TensorSpec* spec = nullptr;
  std::vector<ResolvedSegment> segments;
};

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// The checkpoint's tensors by canonical (official) name: one lookup whatever the spelling.
class NameIndex {
 public:
  static Result<NameIndex> build(const CheckpointDir& dir) {
    NameIndex idx;
    for (const std::string& n : dir.names()) {
      const auto [it, fresh] = idx.by_canonical_.emplace(canonical_name(n), n);
      if (!fresh)
        return Status::invalid_model("'%s' holds both '%s' and '%s', which name the same tensor",
                                     dir.dir().c_str(), it->second.c_str(), n.c_str());
    }
    return idx;
  }
  // The checkpoint's own name for `name` (any spelling), or nullptr.
  const std::string* find(const std::string& name) const {
    const auto it = by_canonical_.find(canonical_name(name));
    return it == by_canonical_.end() ? nullptr : &it->second;
  }

 private:
  std::unordered_map<std::string, std::string> by_canonical_;
};

// The scale companion of a quantised weight: official `X.scale`, or HF-FP8 `X.weight_scale_inv`.
const TensorView* find_scale(const CheckpointDir& dir, const NameIndex& names,
                             const std::string& weight, std::unordered_set<std::string>* used) {
  const std::string suffix = ".weight";
  if (weight.size() <= suffix.size() ||
      weight.compare(weight.size() - suffix.size(), suffix.size(), suffix) != 0)
    return nullptr;
  const std::string base = weight.substr(0, weight.size() - suffix.size());
  for (const std::string& name : {base + ".scale", weight + "_scale_inv"}) {
    const std::string* actual = names.find(name);
    if (const TensorView* t = actual ? dir.find(*actual) : nullptr) {
      used->insert(*actual);
      return t;
    }
  }
  return nullptr;
}

Result<Job> resolve(const CheckpointDir& dir, const NameIndex& names, const model::TensorSpec& spec,
                    const model::Shape& shape, Layout layout,
                    std::unordered_set<std::string>* used) {
  DS4_ASSIGN_OR_RETURN(std::vector<SourceSegment> plan, source_plan(spec, shape, layout));
  Job job;
  job.spec = &spec;
  const bool integer = spec.type == gguf::GgufType::kI32;
  for (const SourceSegment& seg : plan) {
    const std::string* actual = names.find(seg.name);
    const TensorView* w = actual ? dir.find(*actual) : nullptr;
    if (w == nullptr)
      return Status::not_found("source tensor '%s' (for %s) is not in the checkpoint",
                               seg.name.c_str(), spec.name.c_str());
    used->insert(*actual);
    ResolvedSegment r;
    r.row0 = seg.row0;
    r.n_rows = seg.n_rows;
    if (integer) {
      if (w->dtype != Dtype::kI64 && w->dtype != Dtype::kI32)
        return Status::invalid_model("'%s' has dtype %s, expected I64 or I32", w->name.c_str(),
                                     std::string(to_string(w->dtype)).c_str());
      if (w->shape != seg.shape)
        return Status::invalid_model("'%s' has shape %s, expected %s", w->name.c_str(),
                                     shape_str(w->shape).c_str(), shape_str(seg.shape).c_str());
      r.src.weight = w;
      job.segments.push_back(r);
      continue;
    }
    DS4_ASSIGN_OR_RETURN(r.src, describe_source(*w, find_scale(dir, names, seg.name, used)));
    std::vector<int64_t> logical = w->shape;
    if (r.src.kind == SourceMatrix::Kind::kFp4Group) logical.back() *= 2;
    // A 1-element vector may be stored as a scalar.
    const bool scalar_ok = logical.empty() && seg.shape == std::vector<int64_t>{1};
    if (logical != seg.shape && !scalar_ok)
      return Status::invalid_model("'%s' has %sshape %s, but %s needs %s", w->name.c_str(),
                                   r.src.kind == SourceMatrix::Kind::kFp4Group ? "unpacked " : "",
                                   shape_str(logical).c_str(), spec.name.c_str(),
                                   shape_str(seg.shape).c_str());
    job.segments.push_back(r);
  }
  return job;
}

Status write_integer(const Job& job, const model::Shape& shape, gguf::Writer& writer,
                     size_t index) {
  uint64_t offset = 0;
  for (const ResolvedSegment& seg : job.segments) {
    const TensorView& w = *seg.src.weight;
    const uint64_t n = w.n_elements();
    std::vector<int32_t> out(n);
    for (uint64_t i = 0; i < n; ++i) {
      int64_t v = 0;
      if (w.dtype == Dtype::kI64) {
        for (int b = 7; b >= 0; --b)
          v = static_cast<int64_t>((static_cast<uint64_t>(v) << 8) | w.data[8 * i + b]);
      } else {
        int32_t v32 = 0;
        for (int b = 3; b >= 0; --b)
          v32 = static_cast<int32_t>((static_cast<uint32_t>(v32) << 8) | w.data[4 * i + b]);
        v = v32;
      }
      if (v < 0 || v >= shape.n_expert)
        return Status::invalid_model("'%s' element %llu = %lld is not an expert id (0..%d)",
                                     w.name.c_str(), static_cast<unsigned long long>(i),
                                     static_cast<long long>(v), shape.n_expert - 1);
      out[i] = static_cast<int32_t>(v);
    }
    const auto bytes = std::span(reinterpret_cast<const uint8_t*>(out.data()), out.size() * 4);
    DS4_TRY(writer.write_tensor_data(index, bytes, offset));
    offset += bytes.size();
  }
  return Status::ok();
}

Status write_float(const Job& job, gguf::Writer& writer, size_t index, base::ThreadPool& pool,
                   const imatrix::Imatrix* im) {
  const model::TensorSpec& spec = *job.spec;
  // With an importance matrix a routed expert stack goes one expert's rows at a time, each with
  // its expert's column weights.
  const bool weighted = im != nullptr && spec.role == model::TensorRole::kRoutedExpert &&
                        gguf::type_info(static_cast<uint32_t>(spec.type))->block_elems > 1;
  const int64_t per_expert = static_cast<int64_t>(spec.dims.size() > 1 ? spec.dims[1] : 1);
  const bool down = spec.name.find("ffn_down_exps") != std::string::npos;
  const int64_t cols = static_cast<int64_t>(spec.dims[0]);
  const auto row_bytes = gguf::byte_size(spec.type, static_cast<uint64_t>(cols));
  if (!row_bytes)
    return Status::internal("'%s': %lld columns are not whole %s blocks", spec.name.c_str(),
                            static_cast<long long>(cols),
                            std::string(gguf::to_string(spec.type)).c_str());
  const int64_t chunk = std::max<int64_t>(1, kChunkFloats / std::max<int64_t>(cols, 1));
  std::vector<float> buf;
  std::vector<uint8_t> packed;
  uint64_t out_row = 0;
  for (const ResolvedSegment& seg : job.segments) {
    if (seg.src.cols != cols)
      return Status::internal("'%s': source has %lld columns", spec.name.c_str(),
                              static_cast<long long>(seg.src.cols));
    for (int64_t r0 = 0, n = 0; r0 < seg.n_rows; r0 += n) {
      n = std::min(chunk, seg.n_rows - r0);
      if (weighted) n = std::min(n, per_expert - static_cast<int64_t>(out_row) % per_expert);
      buf.resize(static_cast<size_t>(n * cols));
      packed.resize(static_cast<size_t>(n) * *row_bytes);
      // Decode in parallel slices; the first error (if any) wins.
      const int64_t tasks = std::min<int64_t>(n, 4 * pool.size());
      std::mutex mu;
      Status first;
      std::atomic<bool> failed{false};
      pool.parallel_for(tasks, [&](int64_t t) {
        const int64_t a = n * t / tasks, b = n * (t + 1) / tasks;
        Status s = decode_rows(seg.src, seg.row0 + r0 + a, b - a, buf.data() + a * cols);
        for (int64_t i = a * cols; s.is_ok() && i < b * cols; ++i) {
          if (!std::isfinite(buf[static_cast<size_t>(i)]))
            s = Status::invalid_model("'%s' decodes to a non-finite value at row %lld",
                                      seg.src.weight->name.c_str(),
                                      static_cast<long long>(seg.row0 + r0 + i / cols));
        }
        if (!s.is_ok() && !failed.exchange(true)) {
          std::lock_guard<std::mutex> lock(mu);
          first = s;
        }
      });
      if (failed) return first;
      const std::optional<std::vector<float>> w =
          weighted ? im->importance(spec.layer, static_cast<int>(out_row / per_expert), down)
                   : std::nullopt;
      DS4_TRY(quant::quantize_rows(spec.type, buf.data(), packed.data(), n, cols,
                                   w ? w->data() : nullptr, &pool)
                  .with_context(spec.name));
      DS4_TRY(writer.write_tensor_data(index, packed, out_row * *row_bytes));
      out_row += static_cast<uint64_t>(n);
    }
  }
  return Status::ok();
}

}  // namespace

Status convert_checkpoint(const ConvertOptions& opts, ConvertReport* report) {
  namespace fs = std::filesystem;
  DS4_ASSIGN_OR_RETURN(CheckpointDir dir, CheckpointDir::open(opts.src_dir));
  const std::string config_path = (fs::path(opts.src_dir) / "config.json").string();
  DS4_ASSIGN_OR_RETURN(std::string config_text, base::read_file(config_path));
  std::vector<std::string> unknown_keys;
  auto shape_or = shape_from_config(config_text, &unknown_keys);
  if (!shape_or) return shape_or.status().with_context(config_path);
  const model::Shape shape = *shape_or;
  DS4_ASSIGN_OR_RETURN(Layout layout, detect_layout(dir));
  DS4_ASSIGN_OR_RETURN(NameIndex by_name, NameIndex::build(dir));

  MetadataList tok;
  if (!opts.vocab_gguf.empty()) {
    DS4_ASSIGN_OR_RETURN(tok, tokenizer_metadata_from_gguf(opts.vocab_gguf, shape.n_vocab));
  } else {
    const std::string tj = (fs::path(opts.src_dir) / "tokenizer.json").string();
    std::error_code ec;
    if (!fs::exists(tj, ec))
      return Status::not_found("no tokenizer: '%s' is missing and no vocabulary GGUF was given",
                               tj.c_str());
    DS4_ASSIGN_OR_RETURN(tok, tokenizer_metadata_from_json(tj, shape.n_vocab));
  }

  // Resolve and check every source before creating the output. An optional tensor (the selection
  // bias) is written when the checkpoint has it; the official one has none on hash layers.
  const std::vector<model::TensorSpec> all = model::model_tensors(shape, opts.recipe);
  std::vector<model::TensorSpec> specs;
  std::unordered_set<std::string> used;
  std::vector<Job> jobs;
  jobs.reserve(all.size());
  specs.reserve(all.size());
  for (const model::TensorSpec& spec : all) {
    auto job = resolve(dir, by_name, spec, shape, layout, &used);
    if (!job && job.status().code() == StatusCode::kNotFound &&
        spec.presence != model::Presence::kRequired)
      continue;
    if (!job) return job.status();
    specs.push_back(spec);
    jobs.push_back(std::move(job).value());
  }
  for (size_t k = 0; k < jobs.size(); ++k) jobs[k].spec = &specs[k];

  std::optional<imatrix::Imatrix> im;
  if (!opts.imatrix.empty()) {
    DS4_ASSIGN_OR_RETURN(im, imatrix::read_imatrix(opts.imatrix, shape));
  }

  DS4_ASSIGN_OR_RETURN(gguf::Writer writer, gguf::Writer::create(opts.output));
  for (auto& [key, value] : model::shape_metadata(shape)) DS4_TRY(writer.add_metadata(key, value));
  for (auto& [key, value] : tok) DS4_TRY(writer.add_metadata(key, value));
  std::vector<size_t> index;
  for (const model::TensorSpec& spec : specs) {
    DS4_ASSIGN_OR_RETURN(size_t i, writer.add_tensor(spec.name, spec.type, spec.dims));
    index.push_back(i);
  }
  DS4_TRY(writer.write_header());
  base::ThreadPool pool(opts.threads);
  for (size_t k = 0; k < jobs.size(); ++k) {
    const model::TensorSpec& spec = *jobs[k].spec;
    if (opts.progress)
      std::fprintf(stderr, "[%zu/%zu] %s (%s)\n", k + 1, jobs.size(), spec.name.c_str(),
                   std::string(gguf::to_string(spec.type)).c_str());
    if (spec.type == gguf::GgufType::kI32) {
      DS4_TRY(write_integer(jobs[k], shape, writer, index[k]));
    } else {
      DS4_TRY(write_float(jobs[k], writer, index[k], pool, im ? &*im : nullptr));
    }
  }
  DS4_TRY(writer.finish());
  if (report != nullptr) {
    report->layout = naming_of(dir);
    report->unknown_config_keys = unknown_keys;
    report->shape = std::string(shape.name);
    report->n_tensors = specs.size();
    const std::vector<std::string> names = dir.names();
    report->n_unused = names.size() - std::min(names.size(), used.size());
    report->output_bytes = writer.file_size();
  }
  return Status::ok();
}

int run_convert(const ConvertOptions& opts) {
  ConvertReport report;
  if (Status s = convert_checkpoint(opts, &report); !s.is_ok()) {
    std::fprintf(stderr, "convert: %s\n", s.to_string().c_str());
    return 1;
  }
  for (const std::string& k : report.unknown_config_keys)
    std::fprintf(stderr, "convert: note: config.json key '%s' is not understood and was ignored\n",
                 k.c_str());
  std::printf(
      "wrote %s: %zu tensors (%s recipe, shape %s) from a %s checkpoint, %zu source tensors "
      "unused, %llu bytes\n",
      opts.output.c_str(), report.n_tensors, std::string(model::to_string(opts.recipe)).c_str(),
      report.shape.c_str(), report.layout.c_str(), report.n_unused,
      static_cast<unsigned long long>(report.output_bytes));
  return 0;
}

}  // namespace ds4::convert
