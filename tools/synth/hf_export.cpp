// tools/synth/hf_export.cpp: synthetic weights as a Hugging Face checkpoint (see hf_export.h).
#include "tools/synth/hf_export.h"

#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "tools/convert/name_map.h"
#include "tools/convert/safetensors_writer.h"

namespace ds4::synth {

std::string hf_config_json(const model::Shape& s) {
  std::vector<int> ratios;
  for (int il = 0; il < s.n_layer; ++il) ratios.push_back(s.compress_ratio(il));
  ratios.push_back(0);  // the MTP layer's entry, as in the published config
  const nlohmann::json j = {
      {"architectures", {"DeepseekV4ForCausalLM"}},
      {"model_type", "deepseek_v4"},
      {"vocab_size", s.n_vocab},
      {"hidden_size", s.n_embd},
      {"num_hidden_layers", s.n_layer},
      {"num_attention_heads", s.n_head},
      {"num_key_value_heads", 1},
      {"head_dim", s.head_dim},
      {"qk_rope_head_dim", s.n_rot},
      {"q_lora_rank", s.n_lora_q},
      {"o_lora_rank", s.n_lora_o},
      {"o_groups", s.n_out_group},
      {"moe_intermediate_size", s.n_ff_exp},
      {"n_routed_experts", s.n_expert},
      {"num_experts_per_tok", s.n_expert_used},
      {"n_shared_experts", s.n_expert_shared},
      {"num_hash_layers", s.n_hash_layer},
      {"routed_scaling_factor", s.expert_weights_scale},
      {"swiglu_limit", model::kSwigluClamp},
      {"hc_mult", s.n_hc},
      {"hc_sinkhorn_iters", s.n_sinkhorn},
      {"hc_eps", model::kHcEps},
      {"index_n_heads", s.n_indexer_head},
      {"index_head_dim", s.indexer_head_dim},
      {"index_topk", s.indexer_top_k},
      {"sliding_window", s.n_swa},
      {"rms_norm_eps", model::kRmsEps},
      {"rope_theta", model::kRopeFreqBase},
      {"compress_rope_theta", model::kCompressRopeFreqBase},
      {"rope_scaling",
       {{"type", "yarn"},
        {"factor", model::kYarnFactor},
        {"original_max_position_embeddings", model::kYarnOrigContext},
        {"beta_fast", model::kYarnBetaFast},
        {"beta_slow", model::kYarnBetaSlow}}},
      {"max_position_embeddings", model::kMaxContext},
      {"compress_ratios", ratios},
      {"tie_word_embeddings", false},
      {"bos_token_id", 0},
      {"eos_token_id", 1},
  };
  return j.dump(2);
}

Status write_hf_checkpoint(const SynthOptions& opts, const std::string& dir) {
  const auto specs = model::model_tensors(opts.shape, model::Recipe::kF32);
  LawContext law{opts.decisive, nullptr};
  std::optional<SuccessorMap> successors;
  if (opts.decisive.sampling) {
    DS4_ASSIGN_OR_RETURN(successors, successor_map(opts.vocab_gguf, opts.shape.n_vocab, opts.seed));
    law.successors = &*successors;
  }
  std::map<std::string, convert::TensorData> out;  // HF tensors, filled segment by segment
  for (const model::TensorSpec& spec : specs) {
    // Hugging Face's hash-routed layers hold no selection bias (the engine never reads one).
    if (spec.presence == model::Presence::kIgnored) continue;
    DS4_ASSIGN_OR_RETURN(const auto plan,
                         convert::source_plan(spec, opts.shape, convert::Layout::kHuggingFace));
    const uint64_t row_elems = spec.dims[0], rows = spec.n_elements() / row_elems;
    std::vector<uint8_t> values(spec.n_elements() * 4);
    generate_rows(spec, opts.shape, opts.seed, 0, rows, values.data(), law);
    const bool ints = spec.type == gguf::GgufType::kI32;
    const convert::Dtype dtype =
        ints ? convert::Dtype::kI64 : convert::Dtype::kF32;  // HF keeps tid2eid as int64
    const uint64_t elem = ints ? 8 : 4;
    uint64_t next_row = 0;  // the spec's rows, consumed by its segments in order
    for (const convert::SourceSegment& seg : plan) {
      convert::TensorData& t = out[seg.name];
      if (t.name.empty()) {
        uint64_t n = 1;
        for (int64_t d : seg.shape) n *= static_cast<uint64_t>(d);
        t = {seg.name, dtype, seg.shape, std::vector<uint8_t>(n * elem, 0)};
      }
      for (int64_t r = 0; r < seg.n_rows; ++r, ++next_row) {
        uint8_t* dst = t.bytes.data() + (static_cast<uint64_t>(seg.row0 + r) * row_elems) * elem;
        const uint8_t* src = values.data() + next_row * row_elems * 4;
        if (!ints) {
          std::memcpy(dst, src, row_elems * 4);
          continue;
        }
        for (uint64_t k = 0; k < row_elems; ++k) {
          int32_t v;
          std::memcpy(&v, src + 4 * k, 4);
          const int64_t w = v;
          std::memcpy(dst + 8 * k, &w, 8);
        }
      }
    }
    if (next_row != rows)
      return Status::internal("tensor '%s': segments cover %llu of %llu rows", spec.name.c_str(),
                              static_cast<unsigned long long>(next_row),
                              static_cast<unsigned long long>(rows));
  }
  std::vector<convert::TensorData> tensors;
  tensors.reserve(out.size());
  for (auto& [name, t] : out) tensors.push_back(std::move(t));
  return convert::write_checkpoint(dir, tensors, hf_config_json(opts.shape), uint64_t{256} << 20);
}

}  // namespace ds4::synth
