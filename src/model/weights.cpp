// src/model/weights.cpp: name -> weight binding.
#include "model/weights.h"

#include <string>

#include "model/rope.h"

namespace ds4::model {
namespace {

class Binder {
 public:
  Binder(const gguf::Reader& f, backend::Backend& b) : file_(f), backend_(b) {}

  // The named tensor, or an absent weight when optional and missing.
  Result<backend::Weight> get(const std::string& name, bool optional = false) {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (t == nullptr) {
      if (optional) return backend::Weight{};
      return Status::invalid_model("missing tensor '%s'", name.c_str());
    }
    backend::Weight w;
    w.data = file_.tensor_data(*t).data();
    w.type = t->type;
    for (size_t i = 0; i < t->dims.size() && i < 3; ++i) w.ne[i] = static_cast<int64_t>(t->dims[i]);
    return backend_.upload(w);
  }

 private:
  const gguf::Reader& file_;
  backend::Backend& backend_;
};

// One decoder layer under `p` ("blk.N." or "mtp.0."): compress ratio `ratio`, experts picked by
// the token's hash table or by the biased router.
Status bind_layer(Binder& b, const Shape& s, const std::string& p, int ratio, bool hash_routed,
                  LayerWeights& L) {
  DS4_ASSIGN_OR_RETURN(L.hc_attn.fn, b.get(p + "hc_attn_fn.weight"));
  DS4_ASSIGN_OR_RETURN(L.hc_attn.scale, b.get(p + "hc_attn_scale.weight"));
  DS4_ASSIGN_OR_RETURN(L.hc_attn.base, b.get(p + "hc_attn_base.weight"));
  DS4_ASSIGN_OR_RETURN(L.hc_ffn.fn, b.get(p + "hc_ffn_fn.weight"));
  DS4_ASSIGN_OR_RETURN(L.hc_ffn.scale, b.get(p + "hc_ffn_scale.weight"));
  DS4_ASSIGN_OR_RETURN(L.hc_ffn.base, b.get(p + "hc_ffn_base.weight"));
  DS4_ASSIGN_OR_RETURN(L.attn_norm, b.get(p + "attn_norm.weight"));
  DS4_ASSIGN_OR_RETURN(L.q_a, b.get(p + "attn_q_a.weight"));
  DS4_ASSIGN_OR_RETURN(L.q_a_norm, b.get(p + "attn_q_a_norm.weight"));
  DS4_ASSIGN_OR_RETURN(L.q_b, b.get(p + "attn_q_b.weight"));
  DS4_ASSIGN_OR_RETURN(L.kv, b.get(p + "attn_kv.weight"));
  DS4_ASSIGN_OR_RETURN(L.kv_norm, b.get(p + "attn_kv_a_norm.weight"));
  DS4_ASSIGN_OR_RETURN(L.out_a, b.get(p + "attn_output_a.weight"));
  DS4_ASSIGN_OR_RETURN(L.out_b, b.get(p + "attn_output_b.weight"));
  backend::AttentionLayer& a = L.attn;
  a.ratio = ratio;
  a.n_head = s.n_head;
  a.window = s.n_swa;
  a.index_top_k = s.indexer_top_k;
  a.n_index_head = s.n_indexer_head;
  a.rope = to_params(rope_table(a.ratio != 0));
  DS4_ASSIGN_OR_RETURN(a.sinks, b.get(p + "attn_sinks.weight"));
  if (a.ratio != 0) {
    DS4_ASSIGN_OR_RETURN(L.comp_kv, b.get(p + "attn_compressor_kv.weight"));
    DS4_ASSIGN_OR_RETURN(L.comp_gate, b.get(p + "attn_compressor_gate.weight"));
    DS4_ASSIGN_OR_RETURN(a.comp_ape, b.get(p + "attn_compressor_ape.weight"));
    DS4_ASSIGN_OR_RETURN(a.comp_norm, b.get(p + "attn_compressor_norm.weight"));
  }
  if (a.ratio == 4) {
    DS4_ASSIGN_OR_RETURN(L.index_q, b.get(p + "indexer.attn_q_b.weight"));
    DS4_ASSIGN_OR_RETURN(L.index_proj, b.get(p + "indexer.proj.weight"));
    DS4_ASSIGN_OR_RETURN(L.index_kv, b.get(p + "indexer_compressor_kv.weight"));
    DS4_ASSIGN_OR_RETURN(L.index_gate, b.get(p + "indexer_compressor_gate.weight"));
    DS4_ASSIGN_OR_RETURN(a.index_ape, b.get(p + "indexer_compressor_ape.weight"));
    DS4_ASSIGN_OR_RETURN(a.index_norm, b.get(p + "indexer_compressor_norm.weight"));
  }
  DS4_ASSIGN_OR_RETURN(L.ffn_norm, b.get(p + "ffn_norm.weight"));
  backend::MoeLayer& m = L.moe;
  m.n_expert_used = s.n_expert_used;
  m.weight_scale = s.expert_weights_scale;
  DS4_ASSIGN_OR_RETURN(m.router, b.get(p + "ffn_gate_inp.weight"));
  if (hash_routed) {
    // The table picks the experts; a selection bias in the file is never read (inventory.h).
    DS4_ASSIGN_OR_RETURN(m.tid2eid, b.get(p + "ffn_gate_tid2eid.weight"));
  } else {
    DS4_ASSIGN_OR_RETURN(m.bias, b.get(p + "exp_probs_b.bias", /*optional=*/true));
  }
  DS4_ASSIGN_OR_RETURN(m.gate_exps, b.get(p + "ffn_gate_exps.weight"));
  DS4_ASSIGN_OR_RETURN(m.up_exps, b.get(p + "ffn_up_exps.weight"));
  DS4_ASSIGN_OR_RETURN(m.down_exps, b.get(p + "ffn_down_exps.weight"));
  DS4_ASSIGN_OR_RETURN(m.gate_shexp, b.get(p + "ffn_gate_shexp.weight"));
  DS4_ASSIGN_OR_RETURN(m.up_shexp, b.get(p + "ffn_up_shexp.weight"));
  DS4_ASSIGN_OR_RETURN(m.down_shexp, b.get(p + "ffn_down_shexp.weight"));
  return Status::ok();
}

}  // namespace

Result<ModelWeights> bind_weights(const gguf::Reader& file, const Shape& shape,
                                  backend::Backend& backend, const LayerRange& range) {
  Binder b(file, backend);
  ModelWeights w;
  if (range.begin == 0) {
    DS4_ASSIGN_OR_RETURN(w.token_embd, b.get("token_embd.weight"));
  }
  w.layers.resize(static_cast<size_t>(shape.n_layer));
  for (int il = range.begin; il < range.end; ++il) {
    DS4_TRY(bind_layer(b, shape, "blk." + std::to_string(il) + ".", shape.compress_ratio(il),
                       shape.hash_routed(il), w.layers[il]));
    w.layers[il].moe.layer = il;
  }
  if (!range.head) return w;
  DS4_ASSIGN_OR_RETURN(w.head.hc.fn, b.get("output_hc_fn.weight"));
  DS4_ASSIGN_OR_RETURN(w.head.hc.scale, b.get("output_hc_scale.weight"));
  DS4_ASSIGN_OR_RETURN(w.head.hc.base, b.get("output_hc_base.weight"));
  DS4_ASSIGN_OR_RETURN(w.head.norm, b.get("output_norm.weight"));
  DS4_ASSIGN_OR_RETURN(w.head.output, b.get("output.weight"));
  return w;
}

Result<MtpWeights> bind_mtp_weights(const gguf::Reader& file, const Shape& shape,
                                    backend::Backend& backend, const backend::Weight& output) {
  Binder b(file, backend);
  MtpWeights m;
  const std::string p = "mtp.0.";
  DS4_ASSIGN_OR_RETURN(m.e_proj, b.get(p + "e_proj.weight"));
  DS4_ASSIGN_OR_RETURN(m.h_proj, b.get(p + "h_proj.weight"));
  DS4_ASSIGN_OR_RETURN(m.enorm, b.get(p + "enorm.weight"));
  DS4_ASSIGN_OR_RETURN(m.hnorm, b.get(p + "hnorm.weight"));
  // model.md §8.1: a dense layer (no compressor), routed by the biased router.
  DS4_TRY(bind_layer(b, shape, p, /*ratio=*/0, /*hash_routed=*/false, m.layer));
  m.layer.moe.layer = shape.n_layer;  // the MTP block's layer, after the model's
  DS4_ASSIGN_OR_RETURN(m.head.hc.fn, b.get(p + "hc_head_fn.weight"));
  DS4_ASSIGN_OR_RETURN(m.head.hc.scale, b.get(p + "hc_head_scale.weight"));
  DS4_ASSIGN_OR_RETURN(m.head.hc.base, b.get(p + "hc_head_base.weight"));
  DS4_ASSIGN_OR_RETURN(m.head.norm, b.get(p + "norm.weight"));
  m.head.output = output;  // the main model's vocabulary projection
  return m;
}

}  // namespace ds4::model
