// tools/convert/name_map.cpp: the name map table and the config.json reader.
#include "tools/convert/name_map.h"

#include <array>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

namespace ds4::convert {
namespace {

using nlohmann::json;

struct NameRow {
  std::string_view gguf;      // after "blk.N." (per layer) or the whole name (top level)
  std::string_view official;  // after "layers.N."
  std::string_view hf;        // after "model.layers.N."
};

// semantics-diff.md B.1. Routed experts are handled separately (fused / per-expert).
constexpr std::array<NameRow, 33> kLayerNames{{
    {"hc_attn_fn.weight", "hc_attn_fn", "attn_hc.fn"},
    {"hc_attn_base.weight", "hc_attn_base", "attn_hc.base"},
    {"hc_attn_scale.weight", "hc_attn_scale", "attn_hc.scale"},
    {"hc_ffn_fn.weight", "hc_ffn_fn", "ffn_hc.fn"},
    {"hc_ffn_base.weight", "hc_ffn_base", "ffn_hc.base"},
    {"hc_ffn_scale.weight", "hc_ffn_scale", "ffn_hc.scale"},
    {"attn_norm.weight", "attn_norm.weight", "input_layernorm.weight"},
    {"ffn_norm.weight", "ffn_norm.weight", "post_attention_layernorm.weight"},
    {"attn_sinks.weight", "attn.attn_sink", "self_attn.sinks"},
    {"attn_q_a.weight", "attn.wq_a.weight", "self_attn.q_a_proj.weight"},
    {"attn_q_a_norm.weight", "attn.q_norm.weight", "self_attn.q_a_norm.weight"},
    {"attn_q_b.weight", "attn.wq_b.weight", "self_attn.q_b_proj.weight"},
    {"attn_kv.weight", "attn.wkv.weight", "self_attn.kv_proj.weight"},
    {"attn_kv_a_norm.weight", "attn.kv_norm.weight", "self_attn.kv_norm.weight"},
    {"attn_output_a.weight", "attn.wo_a.weight", "self_attn.o_a_proj.weight"},
    {"attn_output_b.weight", "attn.wo_b.weight", "self_attn.o_b_proj.weight"},
    {"attn_compressor_ape.weight", "attn.compressor.ape", "self_attn.compressor.position_bias"},
    {"attn_compressor_kv.weight", "attn.compressor.wkv.weight",
     "self_attn.compressor.kv_proj.weight"},
    {"attn_compressor_gate.weight", "attn.compressor.wgate.weight",
     "self_attn.compressor.gate_proj.weight"},
    {"attn_compressor_norm.weight", "attn.compressor.norm.weight",
     "self_attn.compressor.kv_norm.weight"},
    {"indexer.attn_q_b.weight", "attn.indexer.wq_b.weight",
     "self_attn.compressor.indexer.q_b_proj.weight"},
    {"indexer.proj.weight", "attn.indexer.weights_proj.weight",
     "self_attn.compressor.indexer.scorer.weights_proj.weight"},
    {"indexer_compressor_ape.weight", "attn.indexer.compressor.ape",
     "self_attn.compressor.indexer.position_bias"},
    {"indexer_compressor_kv.weight", "attn.indexer.compressor.wkv.weight",
     "self_attn.compressor.indexer.kv_proj.weight"},
    {"indexer_compressor_gate.weight", "attn.indexer.compressor.wgate.weight",
     "self_attn.compressor.indexer.gate_proj.weight"},
    {"indexer_compressor_norm.weight", "attn.indexer.compressor.norm.weight",
     "self_attn.compressor.indexer.kv_norm.weight"},
    {"ffn_gate_inp.weight", "ffn.gate.weight", "mlp.gate.weight"},
    {"exp_probs_b.bias", "ffn.gate.bias", "mlp.gate.e_score_correction_bias"},
    {"ffn_gate_tid2eid.weight", "ffn.gate.tid2eid", "mlp.gate.tid2eid"},
    {"ffn_gate_shexp.weight", "ffn.shared_experts.w1.weight",
     "mlp.shared_experts.gate_proj.weight"},
    {"ffn_up_shexp.weight", "ffn.shared_experts.w3.weight", "mlp.shared_experts.up_proj.weight"},
    {"ffn_down_shexp.weight", "ffn.shared_experts.w2.weight",
     "mlp.shared_experts.down_proj.weight"},
    {"", "", ""},  // sentinel keeps the array size honest when rows are added
}};

constexpr std::array<NameRow, 6> kTopNames{{
    {"token_embd.weight", "embed.weight", "model.embed_tokens.weight"},
    {"output_norm.weight", "norm.weight", "model.norm.weight"},
    {"output.weight", "head.weight", "lm_head.weight"},
    {"output_hc_fn.weight", "hc_head_fn", "model.hc_head.hc_fn"},
    {"output_hc_base.weight", "hc_head_base", "model.hc_head.hc_base"},
    {"output_hc_scale.weight", "hc_head_scale", "model.hc_head.hc_scale"},
}};

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Torch shape of a GGUF tensor: ne reversed.
std::vector<int64_t> torch_shape(const std::vector<uint64_t>& ne) {
  std::vector<int64_t> out;
  for (auto it = ne.rbegin(); it != ne.rend(); ++it) out.push_back(static_cast<int64_t>(*it));
  return out;
}

// Config field lookup with the HF name first and the official inference name second.
struct Field {
  int model::Shape::*member;
  std::string_view hf;
  std::string_view official;  // empty: same as hf
};
constexpr std::array<Field, 20> kIntFields{{
    {&model::Shape::n_layer, "num_hidden_layers", "n_layers"},
    {&model::Shape::n_embd, "hidden_size", "dim"},
    {&model::Shape::n_vocab, "vocab_size", ""},
    {&model::Shape::n_head, "num_attention_heads", "n_heads"},
    {&model::Shape::head_dim, "head_dim", ""},
    {&model::Shape::n_rot, "qk_rope_head_dim", "rope_head_dim"},
    {&model::Shape::n_out_group, "o_groups", ""},
    {&model::Shape::n_lora_q, "q_lora_rank", ""},
    {&model::Shape::n_lora_o, "o_lora_rank", ""},
    {&model::Shape::n_expert, "n_routed_experts", ""},
    {&model::Shape::n_expert_used, "num_experts_per_tok", "n_activated_experts"},
    {&model::Shape::n_expert_shared, "n_shared_experts", ""},
    {&model::Shape::n_ff_exp, "moe_intermediate_size", "moe_inter_dim"},
    {&model::Shape::n_hash_layer, "num_hash_layers", "n_hash_layers"},
    {&model::Shape::n_swa, "sliding_window", "window_size"},
    {&model::Shape::n_indexer_head, "index_n_heads", ""},
    {&model::Shape::indexer_head_dim, "index_head_dim", ""},
    {&model::Shape::indexer_top_k, "index_topk", ""},
    {&model::Shape::n_hc, "hc_mult", ""},
    {&model::Shape::n_sinkhorn, "hc_sinkhorn_iters", ""},
}};

// Constants the engine hard-codes: when the config states them, they must agree.
struct FixedFloat {
  std::string_view hf;
  std::string_view official;
  double value;
};
constexpr std::array<FixedFloat, 5> kFixedFloats{{
    {"rms_norm_eps", "norm_eps", model::kRmsEps},
    {"hc_eps", "", model::kHcEps},
    {"rope_theta", "", model::kRopeFreqBase},
    {"compress_rope_theta", "", model::kCompressRopeFreqBase},
    {"swiglu_limit", "", model::kSwigluClamp},
}};

const json* lookup(const json& j, std::string_view hf, std::string_view official) {
  if (auto it = j.find(std::string(hf)); it != j.end()) return &*it;
  if (!official.empty()) {
    if (auto it = j.find(std::string(official)); it != j.end()) return &*it;
  }
  return nullptr;
}

std::string field_names(std::string_view hf, std::string_view official) {
  return official.empty() ? std::string(hf) : std::string(hf) + "' / '" + std::string(official);
}

bool same_dims(const model::Shape& a, const model::Shape& b) {
  for (const Field& f : kIntFields) {
    if (a.*f.member != b.*f.member) return false;
  }
  return a.dense_first_layers == b.dense_first_layers &&
         a.expert_weights_scale == b.expert_weights_scale;
}

}  // namespace

std::string_view to_string(Layout l) {
  return l == Layout::kHuggingFace ? "huggingface" : "official";
}

Result<Layout> detect_layout(const CheckpointDir& dir) {
  bool hf = false, official = false;
  for (const std::string& n : dir.names()) {
    if (n == "model.embed_tokens.weight" || starts_with(n, "model.layers.")) hf = true;
    if (n == "embed.weight" || starts_with(n, "layers.")) official = true;
  }
  if (hf && official)
    return Status::invalid_model(
        "'%s' mixes Hugging Face (model.layers.*) and official (layers.*) tensor names",
        dir.dir().c_str());
  if (!hf && !official)
    return Status::invalid_model(
        "'%s' holds neither Hugging Face (model.layers.*) nor official (layers.*) tensors",
        dir.dir().c_str());
  return hf ? Layout::kHuggingFace : Layout::kOfficial;
}

Result<model::Shape> shape_from_config(std::string_view text) {
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return Status::invalid_file("config.json is not valid JSON: %s", e.what());
  }
  if (!j.is_object()) return Status::invalid_file("config.json is not a JSON object");
  model::Shape s{};
  s.name = "custom";
  s.kind = model::ShapeKind::kTest;
  for (const Field& f : kIntFields) {
    const json* v = lookup(j, f.hf, f.official);
    if (v == nullptr)
      return Status::invalid_model("config.json lacks '%s'", field_names(f.hf, f.official).c_str());
    if (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() > (int64_t{1} << 30))
      return Status::invalid_model("config.json '%s' = %s is not a valid count",
                                   field_names(f.hf, f.official).c_str(), v->dump().c_str());
    s.*f.member = static_cast<int>(v->get<int64_t>());
  }
  const json* scale = lookup(j, "routed_scaling_factor", "route_scale");
  if (scale == nullptr || !scale->is_number())
    return Status::invalid_model(
        "config.json lacks a numeric 'routed_scaling_factor' / 'route_scale'");
  s.expert_weights_scale = scale->get<float>();
  for (const FixedFloat& f : kFixedFloats) {
    const json* v = lookup(j, f.hf, f.official);
    if (v == nullptr) continue;
    if (!v->is_number() || std::fabs(v->get<double>() - f.value) > 1e-6 * std::max(1.0, f.value))
      return Status::invalid_model("config.json '%s' = %s; the engine supports only %g",
                                   field_names(f.hf, f.official).c_str(), v->dump().c_str(),
                                   f.value);
  }
  const json* ratios = lookup(j, "compress_ratios", "");
  if (ratios == nullptr || !ratios->is_array() || ratios->size() < static_cast<size_t>(s.n_layer) ||
      s.n_layer < 1)
    return Status::invalid_model(
        "config.json 'compress_ratios' must be an array of at least num_hidden_layers entries");
  if (!(*ratios)[0].is_number_integer())
    return Status::invalid_model("config.json compress_ratios[0] is not an integer");
  s.dense_first_layers = (*ratios)[0].get<int64_t>() == 0;
  for (int il = 0; il < s.n_layer; ++il) {
    const json& r = (*ratios)[static_cast<size_t>(il)];
    if (!r.is_number_integer() || r.get<int64_t>() != s.compress_ratio(il))
      return Status::invalid_model(
          "config.json compress_ratios[%d] = %s, but the V4 layer pattern needs %d", il,
          r.dump().c_str(), s.compress_ratio(il));
  }
  if (const std::string_view p = model::shape_problem(s); !p.empty())
    return Status::invalid_model("config.json describes an unsupported shape: %.*s",
                                 static_cast<int>(p.size()), p.data());
  for (const model::Shape* b : model::builtin_shapes()) {
    if (same_dims(s, *b)) return *b;
  }
  return s;
}

Result<std::vector<SourceSegment>> source_plan(const model::TensorSpec& spec, const model::Shape& s,
                                               Layout layout) {
  const bool hf = layout == Layout::kHuggingFace;
  std::vector<SourceSegment> out;
  const std::vector<int64_t> tshape = torch_shape(spec.dims);
  const int64_t cols = tshape.empty() ? 1 : tshape.back();
  const int64_t rows =
      cols == 0 ? 0 : static_cast<int64_t>(spec.n_elements() / static_cast<uint64_t>(cols));
  auto whole = [&](std::string name) { out.push_back({std::move(name), tshape, 0, rows}); };
  if (spec.layer < 0) {
    for (const NameRow& r : kTopNames) {
      if (r.gguf == spec.name) {
        whole(std::string(hf ? r.hf : r.official));
        return out;
      }
    }
    return Status::unimplemented("no source name known for '%s'", spec.name.c_str());
  }
  const std::string blk = "blk." + std::to_string(spec.layer) + ".";
  if (!starts_with(spec.name, blk))
    return Status::internal("tensor '%s' is not in layer %d", spec.name.c_str(), spec.layer);
  const std::string_view suffix = std::string_view(spec.name).substr(blk.size());
  const std::string prefix = (hf ? "model.layers." : "layers.") + std::to_string(spec.layer) + ".";
  const bool gate = suffix == "ffn_gate_exps.weight", up = suffix == "ffn_up_exps.weight",
             down = suffix == "ffn_down_exps.weight";
  if (gate || up || down) {
    const int64_t e_count = s.n_expert, f = s.n_ff_exp, d = s.n_embd;
    if (hf) {
      if (down) {
        out.push_back({prefix + "mlp.experts.down_proj", {e_count, d, f}, 0, e_count * d});
      } else {
        // gate_up_proj [E, 2F, D]: per expert, the first F rows are gate, the next F up (B.3).
        for (int64_t e = 0; e < e_count; ++e)
          out.push_back({prefix + "mlp.experts.gate_up_proj",
                         {e_count, 2 * f, d},
                         e * 2 * f + (up ? f : 0),
                         f});
      }
    } else {
      const char* w = gate ? "w1" : up ? "w3" : "w2";
      const std::vector<int64_t> shape =
          down ? std::vector<int64_t>{d, f} : std::vector<int64_t>{f, d};
      for (int64_t e = 0; e < e_count; ++e)
        out.push_back({prefix + "ffn.experts." + std::to_string(e) + "." + w + ".weight", shape, 0,
                       shape[0]});
    }
    return out;
  }
  for (const NameRow& r : kLayerNames) {
    if (!r.gguf.empty() && r.gguf == suffix) {
      whole(prefix + std::string(hf ? r.hf : r.official));
      return out;
    }
  }
  return Status::unimplemented("no source name known for '%s'", spec.name.c_str());
}

}  // namespace ds4::convert
