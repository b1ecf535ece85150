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

// transformers 5.x writes per-layer type lists instead of the counts and ratios older configs
// carry; derive those (when absent) so one reader serves every config.
Status derive_legacy_fields(json& j) {
  if (!j.contains("num_hash_layers") && !j.contains("n_hash_layers") &&
      j.contains("mlp_layer_types")) {
    const json& t = j["mlp_layer_types"];
    if (!t.is_array()) return Status::invalid_model("config.json 'mlp_layer_types' is not a list");
    int hash = 0;
    for (size_t i = 0; i < t.size(); ++i) {
      const std::string v = t[i].is_string() ? t[i].get<std::string>() : "";
      if (v != "hash_moe" && v != "moe")
        return Status::invalid_model(
            "config.json mlp_layer_types[%zu] = %s: expected hash_moe or moe", i,
            t[i].dump().c_str());
      if (v == "hash_moe" && hash != static_cast<int>(i))
        return Status::invalid_model(
            "config.json mlp_layer_types[%zu] is hash_moe after a moe layer; the engine "
            "hash-routes only the first layers",
            i);
      if (v == "hash_moe") ++hash;
    }
    j["num_hash_layers"] = hash;
  }
  if (!j.contains("compress_ratios") && j.contains("layer_types")) {
    const json& t = j["layer_types"];
    if (!t.is_array()) return Status::invalid_model("config.json 'layer_types' is not a list");
    json rates = {{"compressed_sparse_attention", 4}, {"heavily_compressed_attention", 128}};
    if (j.contains("compress_rates")) {
      if (!j["compress_rates"].is_object())
        return Status::invalid_model("config.json 'compress_rates' is not an object");
      rates.update(j["compress_rates"]);
    }
    json ratios = json::array();
    for (size_t i = 0; i < t.size(); ++i) {
      const std::string v = t[i].is_string() ? t[i].get<std::string>() : "";
      if (v == "sliding_attention") {
        ratios.push_back(0);
      } else if (rates.contains(v) && rates[v].is_number_integer()) {
        ratios.push_back(rates[v]);
      } else {
        return Status::invalid_model("config.json layer_types[%zu] = %s is not a known layer type",
                                     i, t[i].dump().c_str());
      }
    }
    j["compress_ratios"] = ratios;
  }
  if (!j.contains("qk_rope_head_dim") && !j.contains("rope_head_dim") &&
      j.contains("partial_rotary_factor") && j["partial_rotary_factor"].is_number() &&
      j.contains("head_dim") && j["head_dim"].is_number_integer()) {
    j["qk_rope_head_dim"] = static_cast<int64_t>(
        std::lround(j["head_dim"].get<double>() * j["partial_rotary_factor"].get<double>()));
  }
  return Status::ok();
}

// Keys whose value changes the model's function: when present they must hold what the engine
// implements (semantics-diff.md D.2).
Status check_semantic_keys(const json& j) {
  struct Want {
    std::string_view key;
    json value;
  };
  const Want wants[] = {
      {"scoring_func", "sqrtsoftplus"},
      {"score_func", "sqrtsoftplus"},
      {"hidden_act", "silu"},
      {"num_key_value_heads", 1},
      {"tie_word_embeddings", false},
      {"attention_bias", false},
      {"mlp_bias", false},
      {"norm_topk_prob", true},
  };
  for (const Want& w : wants) {
    const auto it = j.find(std::string(w.key));
    if (it == j.end() || it->is_null()) continue;
    if (*it != w.value)
      return Status::invalid_model("config.json '%.*s' = %s; the engine supports only %s",
                                   static_cast<int>(w.key.size()), w.key.data(), it->dump().c_str(),
                                   w.value.dump().c_str());
  }
  // YaRN of the compressed layers, wherever the config states it.
  struct YarnKey {
    std::string_view key;
    double value;
  };
  constexpr YarnKey kYarn[] = {{"factor", model::kYarnFactor},
                               {"rope_factor", model::kYarnFactor},
                               {"original_max_position_embeddings", model::kYarnOrigContext},
                               {"original_seq_len", model::kYarnOrigContext},
                               {"beta_fast", model::kYarnBetaFast},
                               {"beta_slow", model::kYarnBetaSlow}};
  std::vector<std::pair<std::string, const json*>> scopes = {{"", &j}};
  for (const char* k : {"rope_scaling", "rope_parameters"}) {
    const auto it = j.find(k);
    if (it == j.end() || !it->is_object()) continue;
    scopes.emplace_back(std::string(k) + ".", &*it);
    if (const auto c = it->find("compress"); c != it->end() && c->is_object())
      scopes.emplace_back(std::string(k) + ".compress.", &*c);
  }
  for (const auto& [where, obj] : scopes) {
    for (const YarnKey& y : kYarn) {
      const auto it = obj->find(std::string(y.key));
      if (it == obj->end() || it->is_null()) continue;
      if (!it->is_number() || std::fabs(it->get<double>() - y.value) > 1e-6 * y.value)
        return Status::invalid_model("config.json '%s%.*s' = %s; the engine supports only %g",
                                     where.c_str(), static_cast<int>(y.key.size()), y.key.data(),
                                     it->dump().c_str(), y.value);
    }
  }
  return Status::ok();
}

// Every top-level key some DeepSeek V4 config carries that the reader either uses, checks, or
// knows to be irrelevant to the weights (training, generation, loading and bookkeeping fields).
bool known_config_key(std::string_view k) {
  for (const Field& f : kIntFields) {
    if (k == f.hf || (!f.official.empty() && k == f.official)) return true;
  }
  for (const FixedFloat& f : kFixedFloats) {
    if (k == f.hf || (!f.official.empty() && k == f.official)) return true;
  }
  constexpr std::string_view kOthers[] = {
      // read or derived here
      "routed_scaling_factor", "route_scale", "compress_ratios", "layer_types", "mlp_layer_types",
      "compress_rates", "partial_rotary_factor", "rope_scaling", "rope_parameters", "rope_factor",
      "original_seq_len", "beta_fast", "beta_slow", "scoring_func", "score_func", "hidden_act",
      "num_key_value_heads", "tie_word_embeddings", "attention_bias", "mlp_bias", "norm_topk_prob",
      // no bearing on the converted weights
      "architectures", "model_type", "transformers_version", "dtype", "torch_dtype",
      "initializer_range", "use_cache", "output_router_logits", "router_aux_loss_coef",
      "router_jitter_noise", "attention_dropout", "pad_token_id", "bos_token_id", "eos_token_id",
      "max_position_embeddings", "num_nextn_predict_layers", "n_mtp_layers", "quantization_config",
      "auto_map", "_name_or_path", "max_batch_size", "max_seq_len", "scale_fmt", "expert_dtype"};
  for (std::string_view o : kOthers) {
    if (k == o) return true;
  }
  return false;
}

}  // namespace

std::string_view to_string(Layout l) {
  return l == Layout::kHuggingFace ? "huggingface" : "official";
}

std::string canonical_name(std::string_view name) {
  for (const NameRow& r : kTopNames) {
    if (name == r.hf) return std::string(r.official);
  }
  std::string_view n = name;
  if (starts_with(n, "model.")) n.remove_prefix(6);
  for (const NameRow& r : kTopNames) {
    // A top-level name as written, or the Hugging Face name without its `model.` prefix.
    if (n == r.official || (starts_with(r.hf, "model.") && n == r.hf.substr(6)))
      return std::string(r.official);
  }
  if (!starts_with(n, "layers.")) return std::string(name);
  const size_t dot = n.find('.', 7);
  if (dot == std::string_view::npos) return std::string(name);
  const std::string prefix(n.substr(0, dot + 1));  // "layers.N."
  std::string_view suffix = n.substr(dot + 1);
  constexpr std::string_view kScaleInv = "_scale_inv";  // HF's FP8 scale companion of X.weight
  const bool scale_inv = suffix.size() > kScaleInv.size() &&
                         suffix.substr(suffix.size() - kScaleInv.size()) == kScaleInv;
  if (scale_inv) suffix.remove_suffix(kScaleInv.size());
  const std::string tail = scale_inv ? std::string(kScaleInv) : std::string();
  for (const NameRow& r : kLayerNames) {
    if (!r.hf.empty() && suffix == r.hf) return prefix + std::string(r.official) + tail;
  }
  // transformers 5.17's save_pretrained writes the KV norm as attn.norm (its reverse renaming
  // of compressor.kv_norm -> compressor.norm also catches self_attn.kv_norm).
  if (suffix == "attn.norm.weight") return prefix + "attn.kv_norm.weight" + tail;
  for (const std::string_view fused : {"gate_up_proj", "down_proj"}) {
    if (suffix == "mlp.experts." + std::string(fused))
      return prefix + "ffn.experts." + std::string(fused) + tail;
  }
  return prefix + std::string(suffix) + tail;
}

Result<Layout> detect_layout(const CheckpointDir& dir) {
  bool model = false, fused = false, per_expert = false;
  for (const std::string& raw : dir.names()) {
    const std::string n = canonical_name(raw);
    if (n == "embed.weight" || starts_with(n, "layers.")) model = true;
    const size_t at = n.find(".ffn.experts.");
    if (!starts_with(n, "layers.") || at == std::string::npos) continue;
    const std::string_view rest = std::string_view(n).substr(at + 13);
    if (rest == "gate_up_proj" || rest == "down_proj") fused = true;
    if (!rest.empty() && rest[0] >= '0' && rest[0] <= '9') per_expert = true;
  }
  if (!model)
    return Status::invalid_model(
        "'%s' holds no DeepSeek V4 tensors (neither an embedding nor layers.* / model.layers.*)",
        dir.dir().c_str());
  if (fused && per_expert)
    return Status::invalid_model(
        "'%s' stores routed experts both fused (experts.gate_up_proj) and per expert "
        "(experts.E.w1)",
        dir.dir().c_str());
  return fused ? Layout::kHuggingFace : Layout::kOfficial;
}

std::string naming_of(const CheckpointDir& dir) {
  bool hf = false, prefixed_official = false;
  for (const std::string& n : dir.names()) {
    if (!starts_with(n, "model.layers.")) continue;
    const size_t dot = n.find('.', 13);
    if (dot == std::string::npos) continue;
    const std::string_view sub = std::string_view(n).substr(dot + 1);
    if (starts_with(sub, "self_attn.") || starts_with(sub, "mlp.")) hf = true;
    if (starts_with(sub, "attn.") || starts_with(sub, "ffn.")) prefixed_official = true;
  }
  if (hf) return "huggingface";
  return prefixed_official ? "transformers-saved" : "official";
}

Result<model::Shape> shape_from_config(std::string_view text,
                                       std::vector<std::string>* unknown_keys) {
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return Status::invalid_file("config.json is not valid JSON: %s", e.what());
  }
  if (!j.is_object()) return Status::invalid_file("config.json is not a JSON object");
  if (unknown_keys != nullptr) {
    for (const auto& [k, v] : j.items()) {
      if (!known_config_key(k)) unknown_keys->push_back(k);
    }
  }
  DS4_TRY(derive_legacy_fields(j));
  DS4_TRY(check_semantic_keys(j));
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
