// src/model/forward.cpp: the schedule. Each sublayer reads like model.md §4.5 and §4.10.
#include "model/forward.h"

#include <algorithm>
#include <array>
#include <span>

#include "base/check.h"

namespace ds4::model {

using backend::Act;
using backend::RowTag;

struct Forward::Buffers {
  backend::Buffer *x, *x_mid, *mix, *cur, *norm, *qr, *qn, *q, *kv, *comp_kv, *comp_gate, *index_kv,
      *index_gate, *index_q, *index_w, *heads, *low, *out;
};

namespace {
constexpr int kHd = 512;
constexpr int kIhd = 128;
}  // namespace

Forward::Forward(const Shape& shape, const ModelWeights& weights, backend::Backend& backend)
    : shape_(shape), w_(weights), b_(backend) {}

Forward::~Forward() = default;

void Forward::reserve(int max_rows) {
  if (max_rows <= max_rows_) return;
  const int64_t r = max_rows;
  const Shape& s = shape_;
  auto make = [&](int64_t cols) {
    storage_.push_back(b_.alloc(r * cols));
    return storage_.back().get();
  };
  storage_.clear();
  buf_ = std::make_unique<Buffers>();
  Buffers& b = *buf_;
  b.x = make(int64_t{s.n_hc} * s.n_embd);
  b.x_mid = make(int64_t{s.n_hc} * s.n_embd);
  b.mix = make(s.hc_mix());
  b.cur = make(s.n_embd);
  b.norm = make(s.n_embd);
  b.qr = make(s.n_lora_q);
  b.qn = make(s.n_lora_q);
  b.q = make(int64_t{s.n_head} * kHd);
  b.kv = make(kHd);
  b.comp_kv = make(2 * kHd);
  b.comp_gate = make(2 * kHd);
  b.index_kv = make(2 * kIhd);
  b.index_gate = make(2 * kIhd);
  b.index_q = make(int64_t{s.n_indexer_head} * kIhd);
  b.index_w = make(s.n_indexer_head);
  b.heads = make(int64_t{s.n_head} * kHd);
  b.low = make(int64_t{s.n_out_group} * s.n_lora_o);
  b.out = make(s.n_embd);
  max_rows_ = max_rows;
}

void Forward::run(std::span<const RowTag> rows, std::span<const int> logit_rows, Act logits) {
  run_range(rows, full_range(shape_), nullptr, logit_rows, logits, nullptr);
}

void Forward::run_range(std::span<const RowTag> rows, const LayerRange& range,
                        const float* hidden_in, std::span<const int> logit_rows, Act logits,
                        float* hidden_out) {
  const int n = static_cast<int>(rows.size());
  DS4_CHECK(n > 0 && n <= max_rows_);
  DS4_CHECK(range.begin >= 0 && range.begin <= range.end && range.end <= shape_.n_layer);
  DS4_CHECK(range.begin == 0 || hidden_in != nullptr);
  DS4_CHECK(range.head || hidden_out != nullptr);
  const int64_t hc_width = int64_t{shape_.n_hc} * shape_.n_embd;
  const Act x = buf_->x->view(n, hc_width);
  // Before the step: a backend may record the step's ops, and the copy is not one of them.
  if (range.begin > 0) b_.upload_act(hidden_in, x);
  b_.begin_step(rows);
  if (range.begin == 0) b_.embed(w_.token_embd, rows, x);
  for (int il = range.begin; il < range.end; ++il) {
    attention_sublayer(w_.layers[il], il, il, rows, n);
    ffn_sublayer(w_.layers[il], il, rows, n);
  }
  if (range.head && !logit_rows.empty()) b_.output_head(w_.head, x, logit_rows, logits);
  b_.end_step();
  if (!range.head) b_.download(x, hidden_out);
}

// model.md §4.5: HC pre, norms and projections, the cache-dependent attention op, grouped output
// projection, HC post.
void Forward::attention_sublayer(const LayerWeights& L, int state_layer, int layer,
                                 std::span<const RowTag> rows, int n) {
  const Shape& s = shape_;
  Buffers& b = *buf_;
  const int64_t hc_width = int64_t{s.n_hc} * s.n_embd;
  const Act x = b.x->view(n, hc_width), mix = b.mix->view(n, s.hc_mix());
  const Act cur = b.cur->view(n, s.n_embd), norm = b.norm->view(n, s.n_embd);
  b_.hc_pre(L.hc_attn, x, cur, mix, &L.attn_norm, norm);

  const Act qr = b.qr->view(n, s.n_lora_q), qn = b.qn->view(n, s.n_lora_q);
  backend::AttentionInputs in;
  in.q = b.q->view(n, int64_t{s.n_head} * kHd);
  in.kv = b.kv->view(n, kHd);
  // The products of the normed input go in groups (Backend::matmuls): q_a with kv, then the
  // compressor and indexer projections.
  using Product = backend::Backend::Product;
  const Product q_and_kv[] = {{&L.q_a, qr}, {&L.kv, in.kv}};
  b_.matmuls(norm, q_and_kv);
  b_.rms_norm(qr, &L.q_a_norm, s.n_lora_q, qn);
  b_.matmul(L.q_b, qn, in.q);
  b_.rms_norm(in.q, nullptr, kHd, in.q);  // per-head, unweighted
  b_.rms_norm(in.kv, &L.kv_norm, kHd, in.kv);
  const int ratio = L.attn.ratio;
  std::array<Product, 5> from_norm;
  size_t n_from_norm = 0;
  if (ratio != 0) {
    const int64_t width = (ratio == 4 ? 2 : 1) * kHd;
    in.comp_kv = b.comp_kv->view(n, width);
    in.comp_gate = b.comp_gate->view(n, width);
    from_norm[n_from_norm++] = {&L.comp_kv, in.comp_kv};
    from_norm[n_from_norm++] = {&L.comp_gate, in.comp_gate};
  }
  if (ratio == 4) {
    in.index_kv = b.index_kv->view(n, 2 * kIhd);
    in.index_gate = b.index_gate->view(n, 2 * kIhd);
    in.index_q = b.index_q->view(n, int64_t{s.n_indexer_head} * kIhd);
    in.index_w = b.index_w->view(n, s.n_indexer_head);
    from_norm[n_from_norm++] = {&L.index_kv, in.index_kv};
    from_norm[n_from_norm++] = {&L.index_gate, in.index_gate};
    from_norm[n_from_norm++] = {&L.index_proj, in.index_w};
    b_.matmul(L.index_q, qn, in.index_q);
  }
  if (n_from_norm > 0) b_.matmuls(norm, std::span(from_norm.data(), n_from_norm));
  const Act heads = b.heads->view(n, int64_t{s.n_head} * kHd);
  b_.attention(state_layer, L.attn, rows, in, heads);
  const Act low = b.low->view(n, int64_t{s.n_out_group} * s.n_lora_o);
  const Act out = b.out->view(n, s.n_embd);
  b_.matmul(L.out_a, heads, low, s.n_out_group);
  b_.matmul(L.out_b, low, out);
  finish_sublayer(layer, Sublayer::kAttention, rows, out);
  b_.hc_post(x, out, mix, b.x_mid->view(n, hc_width));
}

// model.md §4.10: HC pre, norm, router + experts + shared expert, HC post.
void Forward::ffn_sublayer(const LayerWeights& L, int layer, std::span<const RowTag> rows, int n) {
  const Shape& s = shape_;
  Buffers& b = *buf_;
  const int64_t hc_width = int64_t{s.n_hc} * s.n_embd;
  const Act x_mid = b.x_mid->view(n, hc_width), mix = b.mix->view(n, s.hc_mix());
  const Act cur = b.cur->view(n, s.n_embd), norm = b.norm->view(n, s.n_embd);
  b_.hc_pre(L.hc_ffn, x_mid, cur, mix, &L.ffn_norm, norm);
  const Act f = b.out->view(n, s.n_embd);
  b_.moe(L.moe, rows, norm, f);
  finish_sublayer(layer, Sublayer::kFfn, rows, f);
  b_.hc_post(x_mid, f, mix, b.x->view(n, hc_width));
}

// features.md §8.2: the rows' steering (skipped when every row's scale is 0, so the path without
// steering is the unsteered one exactly), then the observer's view of the result.
void Forward::finish_sublayer(int layer, Sublayer which, std::span<const RowTag> rows, Act y) {
  if (layer < 0) return;
  if (!w_.steering.empty()) {
    bool any = false;
    for (const RowTag& r : rows) any = any || r.steer_scale(which) != 0.0f;
    if (any) b_.steer(w_.steering[static_cast<size_t>(layer)], rows, which, y);
  }
  b_.report_sublayer(layer, which, rows, y);
}

Act Forward::hidden(int first_row, int rows) const {
  DS4_CHECK(first_row >= 0 && rows >= 0 && first_row + rows <= max_rows_);
  const int64_t hc_width = int64_t{shape_.n_hc} * shape_.n_embd;
  return Act{buf_->x->view(max_rows_, hc_width).row(first_row), rows, hc_width};
}

void Forward::mtp_normalise(const MtpWeights& m, Act h, Act hn) {
  b_.rms_norm(h, &m.hnorm, shape_.n_embd, hn);
}

// model.md §8.1. The streams of a row are rows of n_embd floats side by side, so the products of
// each stream run as rows of their own: e_proj's input is the same in every stream (the embedding
// in its n_hc copies), which gives E broadcast to every stream.
void Forward::run_mtp(const MtpWeights& m, std::span<const RowTag> rows, Act hn,
                      std::span<const int> logit_rows, Act logits) {
  const int n = static_cast<int>(rows.size());
  DS4_CHECK(n > 0 && n <= max_rows_);
  const Shape& s = shape_;
  const int64_t hc_width = int64_t{s.n_hc} * s.n_embd, streams = int64_t{n} * s.n_hc;
  DS4_CHECK(hn.rows == n && hn.cols == hc_width);
  const Act x = buf_->x->view(n, hc_width), e = buf_->x_mid->view(n, hc_width);
  const Act x_streams{x.data, streams, s.n_embd}, e_streams{e.data, streams, s.n_embd};
  b_.begin_step(rows);
  b_.embed(w_.token_embd, rows, e);
  b_.rms_norm(e, &m.enorm, s.n_embd, e);
  b_.matmul(m.e_proj, e_streams, x_streams);                        // x = E
  b_.matmul(m.h_proj, Act{hn.data, streams, s.n_embd}, e_streams);  // e = G
  b_.add(x, e, x);
  attention_sublayer(m.layer, 0, -1, rows, n);  // not one of the model's layers: no steering
  ffn_sublayer(m.layer, -1, rows, n);
  if (!logit_rows.empty()) b_.output_head(m.head, x, logit_rows, logits);
  b_.end_step();
}

backend::SequenceLayout mtp_sequence_layout(const Shape& shape, int n_ctx) {
  backend::SequenceLayout out;
  out.n_ctx = n_ctx;
  out.head_dim = kHd;
  out.indexer_head_dim = kIhd;
  backend::LayerLayout l;
  l.raw_cap = std::min(shape.n_swa, n_ctx);
  out.layers.push_back(l);
  return out;
}

backend::SequenceLayout sequence_layout(const Shape& shape, int n_ctx) {
  backend::SequenceLayout out;
  out.n_ctx = n_ctx;
  out.head_dim = kHd;
  out.indexer_head_dim = kIhd;
  for (int il = 0; il < shape.n_layer; ++il) {
    backend::LayerLayout l;
    l.ratio = shape.compress_ratio(il);
    l.raw_cap = std::min(shape.n_swa, n_ctx);
    if (l.ratio != 0) {
      l.comp_cap = n_ctx / l.ratio + 2;
      l.frontier_rows = (l.ratio == 4 ? 2 : 1) * l.ratio;
      l.frontier_width = shape.compressor_width(il);
    }
    out.layers.push_back(l);
  }
  return out;
}

}  // namespace ds4::model
