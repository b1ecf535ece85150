// tools/synth/synth.cpp: streamed GGUF synthesis (see synth.h). Float tensors (F32/F16) follow the
// value laws element by element; quantised tensors are random valid blocks: the code bytes come
// straight from the element stream (byte k of the tensor = byte k%8 of element_bits(key, k/8)) and
// the block scales are set so values span about the law's range. docs/synth.md has the details.
#include "tools/synth/synth.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "base/check.h"
#include "base/f16.h"
#include "base/thread_pool.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/hparams.h"
#include "quant/blocks.h"
#include "quant/quantize.h"
#include "tools/convert/tokenizer_keys.h"
#include "tools/synth/synth_values.h"

namespace ds4::synth {
namespace {

using gguf::GgufType;

uint64_t row_bytes(const model::TensorSpec& spec) {
  return *gguf::byte_size(spec.type, spec.dims[0]);
}

// Random bytes [byte_begin, byte_begin + n) of the tensor's stream.
void random_bytes(uint64_t key, uint64_t byte_begin, uint64_t n, uint8_t* out) {
  for (uint64_t k = 0; k < n; ++k) {
    const uint64_t pos = byte_begin + k;
    out[k] = static_cast<uint8_t>(element_bits(key, pos / 8) >> (8 * (pos % 8)));
  }
}

template <class Block>
Block* blocks(uint8_t* p) {
  return reinterpret_cast<Block*>(p);
}

// Sets the scale fields of random blocks so the dequantised values span about +-law.scale.
void fix_blocks(GgufType type, float range, uint8_t* data, uint64_t n_bytes) {
  switch (type) {
    case GgufType::kQ8_0: {
      auto* b = blocks<quant::BlockQ8_0>(data);
      for (uint64_t i = 0; i < n_bytes / sizeof(quant::BlockQ8_0); ++i) {
        b[i].d = f32_to_f16(range / 127.0f);
        for (int8_t& q : b[i].qs) q = q == -128 ? int8_t{-127} : q;  // activation-symmetric codes
      }
      return;
    }
    case GgufType::kQ2_K: {
      auto* b = blocks<quant::BlockQ2_K>(data);
      for (uint64_t i = 0; i < n_bytes / sizeof(quant::BlockQ2_K); ++i) {
        for (uint8_t& s : b[i].scales) s = static_cast<uint8_t>(s | 1);  // no all-zero sub-block
        b[i].d = f32_to_f16(range / 24.0f);
        b[i].dmin = f32_to_f16(range / 15.0f);
      }
      return;
    }
    case GgufType::kQ4_K: {
      auto* b = blocks<quant::BlockQ4_K>(data);
      for (uint64_t i = 0; i < n_bytes / sizeof(quant::BlockQ4_K); ++i) {
        b[i].d = f32_to_f16(range / 256.0f);
        b[i].dmin = f32_to_f16(range / 32.0f);
      }
      return;
    }
    case GgufType::kIQ2_XXS: {
      auto* b = blocks<quant::BlockIQ2_XXS>(data);
      for (uint64_t i = 0; i < n_bytes / sizeof(quant::BlockIQ2_XXS); ++i)
        b[i].d = f32_to_f16(range / 50.0f);
      return;
    }
    default: return;
  }
}

// Rows [row_begin, row_end) of the decisive output.weight: row v is the head's scale times the sum
// of the stored (F16) embedding rows of v's predecessors; a row without predecessors (a special
// token's) keeps the default law. The float rows are then stored in the tensor's type.
void decisive_head_rows(const model::TensorSpec& spec, uint64_t seed, uint64_t row_begin,
                        uint64_t row_end, const SuccessorMap& map, uint8_t* out) {
  const uint64_t n = spec.dims[0];
  const uint64_t head_key = tensor_key(spec.name, seed);
  const uint64_t embd_key = tensor_key("token_embd.weight", seed);
  const ValueLaw law = value_law(spec);
  const uint64_t rb = row_bytes(spec);
  std::vector<float> row(n);
  for (uint64_t v = row_begin; v < row_end; ++v) {
    const auto preds = map.predecessors(static_cast<int32_t>(v));
    if (preds.empty()) {
      for (uint64_t d = 0; d < n; ++d) row[d] = element_value(head_key, v * n + d, law);
    } else {
      std::fill(row.begin(), row.end(), 0.0f);
      for (const int32_t t : preds) {
        for (uint64_t d = 0; d < n; ++d) {
          const float e = element_value(embd_key, static_cast<uint64_t>(t) * n + d, {0.0f, 1.0f});
          row[d] += f16_to_f32(f32_to_f16(e));
        }
      }
      for (float& x : row) x *= law.scale;
    }
    uint8_t* dst = out + (v - row_begin) * rb;
    if (spec.type == GgufType::kF32) {
      std::memcpy(dst, row.data(), n * sizeof(float));
    } else {
      // Every type a head can have (F16, Q8_0, ...) has an encoder: a failure is a bug.
      const Status st =
          quant::quantize_rows(spec.type, row.data(), dst, 1, static_cast<int64_t>(n), nullptr);
      DS4_CHECK_MSG(st.is_ok(), "decisive head: %s", st.to_string().c_str());
    }
  }
}

bool is_indexer_proj(std::string_view name) { return name.ends_with(".indexer.proj.weight"); }

bool is_branch_output(std::string_view name) {
  return name.ends_with(".attn_output_b.weight") || name.ends_with(".ffn_down_shexp.weight") ||
         name.ends_with(".ffn_down_exps.weight");
}

Status copy_tokenizer_keys(const std::string& vocab_path, int n_vocab, gguf::Writer* w) {
  if (vocab_path.empty()) {
    return Status::invalid_argument(
        "a vocabulary GGUF is required (--vocab FILE; build one with 'ds4-gguf vocab')");
  }
  DS4_ASSIGN_OR_RETURN(const convert::MetadataList keys,
                       convert::tokenizer_metadata_from_gguf(vocab_path, n_vocab));
  for (const auto& [key, value] : keys) DS4_TRY(w->add_metadata(key, value));
  return Status::ok();
}

}  // namespace

Result<SuccessorMap> successor_map(const std::string& vocab_gguf, int n_vocab, uint64_t seed) {
  DS4_ASSIGN_OR_RETURN(const convert::MetadataList keys,
                       convert::tokenizer_metadata_from_gguf(vocab_gguf, n_vocab));
  for (const auto& [k, v] : keys) {
    if (k != "tokenizer.ggml.token_type") continue;
    const auto types = v.as_i64_array();
    if (!types || types->size() != static_cast<size_t>(n_vocab))
      return Status::invalid_argument("%s: tokenizer.ggml.token_type is not %d integers",
                                      vocab_gguf.c_str(), n_vocab);
    std::vector<bool> ordinary(types->size());
    size_t n_ordinary = 0;
    for (size_t t = 0; t < types->size(); ++t) n_ordinary += (ordinary[t] = (*types)[t] == 1);
    if (n_ordinary == 0)
      return Status::invalid_argument("%s: no ordinary token (type 1)", vocab_gguf.c_str());
    return SuccessorMap(ordinary, tensor_key("output.weight", seed));
  }
  return Status::invalid_argument("%s lacks tokenizer.ggml.token_type", vocab_gguf.c_str());
}

void generate_rows(const model::TensorSpec& spec, const model::Shape& shape, uint64_t seed,
                   uint64_t row_begin, uint64_t row_end, uint8_t* out, const LawContext& ctx) {
  const uint64_t key = tensor_key(spec.name, seed);
  const uint64_t row_elems = spec.dims[0];
  const uint64_t first = row_begin * row_elems, n = (row_end - row_begin) * row_elems;
  ValueLaw law = value_law(spec);
  if (ctx.decisive.branch_shift != 0 && is_branch_output(spec.name))
    law.scale = std::ldexp(law.scale, -ctx.decisive.branch_shift);
  if (ctx.decisive.indexer && is_indexer_proj(spec.name)) {
    std::memset(out, 0, (row_end - row_begin) * row_bytes(spec));  // +0 in every float type
    return;
  }
  if (ctx.decisive.sampling && ctx.successors != nullptr && spec.name == "output.weight") {
    decisive_head_rows(spec, seed, row_begin, row_end, *ctx.successors, out);
    return;
  }
  switch (spec.type) {
    case GgufType::kF32: {
      auto* f = reinterpret_cast<float*>(out);
      if (ctx.decisive.routing && spec.role == model::TensorRole::kRouterBias) {
        for (uint64_t k = 0; k < n; ++k) f[k] = tiered_bias(key, first + k, shape.n_expert);
        return;
      }
      for (uint64_t k = 0; k < n; ++k) f[k] = element_value(key, first + k, law);
      return;
    }
    case GgufType::kF16: {
      auto* h = reinterpret_cast<uint16_t*>(out);
      for (uint64_t k = 0; k < n; ++k) h[k] = f32_to_f16(element_value(key, first + k, law));
      return;
    }
    case GgufType::kI32: {
      auto* v = reinterpret_cast<int32_t*>(out);
      for (uint64_t k = 0; k < n; ++k)
        v[k] = token_expert(key, first + k, static_cast<int>(row_elems), shape.n_expert);
      return;
    }
    default: {
      const uint64_t rb = row_bytes(spec);
      random_bytes(key, row_begin * rb, (row_end - row_begin) * rb, out);
      fix_blocks(spec.type, law.scale, out, (row_end - row_begin) * rb);
      return;
    }
  }
}

Status synthesize(const SynthOptions& opts, SynthReport* report) {
  const auto t0 = std::chrono::steady_clock::now();
  if (const std::string_view p = model::shape_problem(opts.shape); !p.empty()) {
    return Status::invalid_argument("shape '%.*s': %.*s", int(opts.shape.name.size()),
                                    opts.shape.name.data(), int(p.size()), p.data());
  }
  const std::vector<model::TensorSpec> specs = opts.mtp
                                                   ? model::mtp_tensors(opts.shape, opts.recipe)
                                                   : model::model_tensors(opts.shape, opts.recipe);
  DS4_ASSIGN_OR_RETURN(gguf::Writer w, gguf::Writer::create(opts.output));
  for (auto& [k, v] : model::shape_metadata(opts.shape)) DS4_TRY(w.add_metadata(k, v));
  DS4_TRY(w.add_metadata("general.file_type",
                         gguf::Value::string(std::string(model::to_string(opts.recipe)))));
  DS4_TRY(w.add_metadata("dwarfstar.synthetic_seed", gguf::Value::u64(opts.seed)));
  DS4_TRY(copy_tokenizer_keys(opts.vocab_gguf, opts.shape.n_vocab, &w));
  for (const model::TensorSpec& s : specs) DS4_TRY(w.add_tensor(s.name, s.type, s.dims).status());
  DS4_TRY(w.write_header());

  // Work items of about 8 MiB each, so every core stays busy on the large expert stacks and small
  // tensors cost one item.
  struct Chunk {
    size_t tensor;
    uint64_t row_begin, row_end;
  };
  constexpr uint64_t kChunkBytes = 8ull << 20;
  std::vector<Chunk> chunks;
  for (size_t t = 0; t < specs.size(); ++t) {
    const uint64_t rows = specs[t].n_elements() / specs[t].dims[0];
    const uint64_t per = std::max<uint64_t>(1, kChunkBytes / row_bytes(specs[t]));
    for (uint64_t r = 0; r < rows; r += per) chunks.push_back({t, r, std::min(rows, r + per)});
  }
  LawContext law{opts.decisive, nullptr};
  std::optional<SuccessorMap> successors;
  if (opts.decisive.sampling) {
    DS4_ASSIGN_OR_RETURN(successors, successor_map(opts.vocab_gguf, opts.shape.n_vocab, opts.seed));
    law.successors = &*successors;
  }
  base::ThreadPool pool(opts.threads);
  std::mutex mu;
  Status first_error;
  pool.parallel_for(static_cast<int64_t>(chunks.size()), [&](int64_t i) {
    const Chunk& c = chunks[static_cast<size_t>(i)];
    const model::TensorSpec& spec = specs[c.tensor];
    const uint64_t rb = row_bytes(spec);
    std::vector<uint8_t> buf((c.row_end - c.row_begin) * rb);
    generate_rows(spec, opts.shape, opts.seed, c.row_begin, c.row_end, buf.data(), law);
    const Status s = w.write_tensor_data(c.tensor, buf, c.row_begin * rb);
    if (!s.is_ok()) {
      std::lock_guard<std::mutex> lock(mu);
      if (first_error.is_ok()) first_error = s;
    }
  });
  DS4_TRY(first_error);
  DS4_TRY(w.finish());
  if (report != nullptr) {
    report->bytes = w.file_size();
    report->tensors = specs.size();
    report->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return Status::ok();
}

}  // namespace ds4::synth
