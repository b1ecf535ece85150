// src/backend/cpu/cpu_backend.cpp: sequence state and the dense ops (embedding, norms, matmul,
// hyper-connections, output head). Attention is in attention.cpp, MoE in moe.cpp.
#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cstring>

#include "backend/cpu/math.h"
#include "backend/frontier.h"
#include "backend/host_buffer.h"
#include "backend/row_rules.h"
#include "base/check.h"
#include "base/f16.h"
#include "base/host_memory.h"

namespace ds4::backend::cpu {
namespace {

void reset_layer(LayerCache& c) {
  c.raw_head = c.n_raw = c.n_comp = c.n_index = c.n_tokens = 0;
  c.logging = false;
  c.undo.clear();
  if (c.lay.ratio != 0) {
    reset_frontier_rows(c.comp_kv, c.comp_score, 0, c.lay.frontier_rows, c.lay.frontier_width);
  }
  if (c.lay.ratio == 4) reset_frontier_rows(c.index_kv, c.index_score, 0, 8, 256);
}

}  // namespace

CpuBackend::CpuBackend(const BackendOptions& options)
    : pool_(options.threads), k_(quant::best_dot_kernels()) {}

Backend* make_cpu_backend(const BackendOptions& options) { return new CpuBackend(options); }

std::unique_ptr<Buffer> CpuBackend::alloc(int64_t n_floats) {
  return std::make_unique<HostBuffer>(n_floats);
}

Sequence& CpuBackend::sequence(int seq) {
  auto it = seqs_.find(seq);
  DS4_CHECK_MSG(it != seqs_.end(), "unknown sequence %d", seq);
  return *it->second;
}

Status CpuBackend::create_sequence(int seq, const SequenceLayout& layout) {
  if (seqs_.count(seq) != 0) return Status::invalid_argument("sequence %d already exists", seq);
  auto s = std::make_unique<Sequence>();
  s->layout = layout;
  s->layers.resize(layout.layers.size());
  try {
    for (size_t il = 0; il < layout.layers.size(); ++il) {
      LayerCache& c = s->layers[il];
      const LayerLayout& l = layout.layers[il];
      c.lay = l;
      c.raw.resize(static_cast<size_t>(l.raw_cap) * layout.head_dim);
      if (l.ratio != 0) {
        c.comp.resize(static_cast<size_t>(l.comp_cap) * layout.head_dim);
        c.comp_kv.resize(static_cast<size_t>(l.frontier_rows) * l.frontier_width);
        c.comp_score.resize(c.comp_kv.size());
      }
      if (l.ratio == 4) {
        c.index.resize(static_cast<size_t>(l.comp_cap) * layout.indexer_head_dim);
        c.index_kv.resize(8 * 256);
        c.index_score.resize(8 * 256);
      }
      reset_layer(c);
    }
  } catch (const std::bad_alloc&) {
    return Status::resource_exhausted("cannot allocate %.1f MiB of KV state for %d tokens",
                                      static_cast<double>(layout.bytes()) / (1 << 20),
                                      layout.n_ctx);
  }
  seqs_[seq] = std::move(s);
  return Status::ok();
}

void CpuBackend::drop_sequence(int seq) { seqs_.erase(seq); }

std::optional<uint64_t> CpuBackend::free_memory_bytes() const {
  return base::host_available_bytes();
}

void CpuBackend::reset_sequence(int seq) {
  for (LayerCache& c : sequence(seq).layers) reset_layer(c);
}

Status CpuBackend::mark_sequence(int seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return Status::not_found("unknown sequence %d", seq);
  for (LayerCache& c : it->second->layers) {
    c.logging = true;
    c.undo.clear();
  }
  return Status::ok();
}

Status CpuBackend::rewind_sequence(int seq, int n_tokens) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return Status::not_found("unknown sequence %d", seq);
  const int hd = it->second->layout.head_dim;
  // Checked on every layer first, so a refusal changes nothing.
  for (const LayerCache& c : it->second->layers) {
    const int back = c.n_tokens - n_tokens;
    if (back < 0 || (back > 0 && (!c.logging || back > static_cast<int>(c.undo.size())))) {
      return Status::out_of_range("cannot take sequence %d back to %d tokens from %d", seq,
                                  n_tokens, c.n_tokens);
    }
  }
  for (LayerCache& c : it->second->layers) {
    while (c.n_tokens > n_tokens) {
      undo_row(c, c.undo.back(), hd);
      c.undo.pop_back();
    }
  }
  return Status::ok();
}

void CpuBackend::settle_sequence(int seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  for (LayerCache& c : it->second->layers) {
    c.logging = false;
    c.undo.clear();
  }
}

namespace {

// Floats written one part after another over a payload's bytes.
struct PayloadCursor {
  uint8_t* at;
  uint8_t* floats(const float* p, size_t n) {
    uint8_t* to = at;
    if (n != 0) std::memcpy(to, p, n * sizeof(float));
    at += n * sizeof(float);
    return to;
  }
};

// A frontier pair written with its unused rows normalised there (the live state keeps them).
void write_frontier(PayloadCursor* out, const std::vector<float>& kv,
                    const std::vector<float>& score, int ratio, int width, int n_tokens) {
  uint8_t* k = out->floats(kv.data(), kv.size());
  uint8_t* s = out->floats(score.data(), score.size());
  normalise_unused_rows(k, s, ratio, width, n_tokens);
}

PartCounts layer_counts(const LayerCache& c, int hd, int ihd) {
  return part_counts(c.lay, hd, ihd, c.n_raw, c.n_comp, c.n_index);
}
size_t layer_bytes(const LayerCache& c, int hd, int ihd) {
  size_t n = 0;
  for (size_t k : layer_counts(c, hd, ihd)) n += k;
  return n * sizeof(float);
}

// One layer in payload order (append_layer_state's), straight from the cache: layer_bytes() at
// out->at.
void write_layer(const LayerCache& c, int hd, int ihd, PayloadCursor* out) {
  const size_t row = static_cast<size_t>(hd);
  for (int i = 0; i < c.n_raw; ++i) {
    out->floats(c.raw.data() + static_cast<size_t>((c.raw_head + i) % c.lay.raw_cap) * row, row);
  }
  if (c.lay.ratio != 0) {
    out->floats(c.comp.data(), static_cast<size_t>(c.n_comp) * row);
    write_frontier(out, c.comp_kv, c.comp_score, c.lay.ratio, c.lay.frontier_width, c.n_tokens);
  }
  if (c.lay.ratio == 4) {
    out->floats(c.index.data(), static_cast<size_t>(c.n_index) * ihd);
    write_frontier(out, c.index_kv, c.index_score, 4, 256, c.n_tokens);
  }
}

void copy_in(std::vector<float>& to, const FloatBytes& from) {
  if (from.count != 0) std::memcpy(to.data(), from.data, from.count * sizeof(float));
}

}  // namespace

Status CpuBackend::export_sequence_into(int seq, std::span<uint8_t> out,
                                        const std::function<void(size_t)>& done) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return Status::not_found("unknown sequence %d", seq);
  const Sequence& s = *it->second;
  const int hd = s.layout.head_dim, ihd = s.layout.indexer_head_dim;
  size_t total = 0;
  for (const LayerCache& c : s.layers) total += layer_bytes(c, hd, ihd);
  if (total != out.size()) return layers_size_mismatch(out.size(), total);
  PayloadCursor cursor{out.data()};
  for (const LayerCache& c : s.layers) {
    write_layer(c, hd, ihd, &cursor);
    if (done) done(static_cast<size_t>(cursor.at - out.data()));
  }
  DS4_CHECK(cursor.at == out.data() + out.size());
  return Status::ok();
}

Result<std::vector<LayerState>> CpuBackend::export_sequence(int seq) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return Status::not_found("unknown sequence %d", seq);
  const Sequence& s = *it->second;
  const int hd = s.layout.head_dim, ihd = s.layout.indexer_head_dim;
  std::vector<LayerState> out(s.layers.size());
  std::vector<uint8_t> bytes;
  for (size_t il = 0; il < s.layers.size(); ++il) {
    const LayerCache& c = s.layers[il];
    bytes.resize(layer_bytes(c, hd, ihd));
    PayloadCursor cursor{bytes.data()};
    write_layer(c, hd, ihd, &cursor);
    const uint8_t* p = bytes.data();
    const LayerStateView v = take_layer_view(&p, c.n_tokens, layer_counts(c, hd, ihd));
    DS4_CHECK(p == bytes.data() + bytes.size() && cursor.at == p);
    out[il] = to_state(v);
  }
  return out;
}

Status CpuBackend::import_sequence(int seq, const std::vector<LayerState>& state) {
  return import_sequence_view(seq, views_of(state));
}

Status CpuBackend::import_sequence_view(int seq, std::span<const LayerStateView> state) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return Status::not_found("unknown sequence %d", seq);
  Sequence& s = *it->second;
  const int64_t hd = s.layout.head_dim, ihd = s.layout.indexer_head_dim;
  // Validated first, so a failure leaves the sequence untouched.
  DS4_TRY(check_state_fits(s.layout, state));
  for (size_t il = 0; il < state.size(); ++il) {
    const LayerStateView& st = state[il];
    LayerCache& c = s.layers[il];
    reset_layer(c);
    c.n_tokens = st.n_tokens;
    c.n_raw = static_cast<int>(static_cast<int64_t>(st.raw.count) / hd);
    copy_in(c.raw, st.raw);
    if (c.lay.ratio != 0) {
      c.n_comp = static_cast<int>(static_cast<int64_t>(st.comp.count) / hd);
      copy_in(c.comp, st.comp);
      copy_in(c.comp_kv, st.comp_kv);
      copy_in(c.comp_score, st.comp_score);
    }
    if (c.lay.ratio == 4) {
      c.n_index = static_cast<int>(static_cast<int64_t>(st.index.count) / ihd);
      copy_in(c.index, st.index);
      copy_in(c.index_kv, st.index_kv);
      copy_in(c.index_score, st.index_score);
    }
  }
  return Status::ok();
}

void CpuBackend::do_download(Act src, float* host) {
  std::memcpy(host, src.data, sizeof(float) * static_cast<size_t>(src.rows * src.cols));
}

void CpuBackend::do_upload_act(const float* host, Act dst) {
  std::memcpy(dst.data, host, sizeof(float) * static_cast<size_t>(dst.rows * dst.cols));
}

void CpuBackend::do_add(Act a, Act b, Act y) {
  const int64_t n = a.rows * a.cols;
  for (int64_t i = 0; i < n; ++i) y.data[i] = a.data[i] + b.data[i];
}

void CpuBackend::do_steer(const Weight& direction, std::span<const RowTag> rows, Sublayer which,
                          Act y) {
  const auto* d = static_cast<const float*>(direction.data);
  for (size_t r = 0; r < rows.size(); ++r) {
    const float s = rows[r].steer_scale(which);
    if (s == 0.0f) continue;
    float* v = y.row(static_cast<int64_t>(r));
    double dot = 0.0;
    for (int64_t i = 0; i < y.cols; ++i) dot += double{d[i]} * v[i];
    const auto k = static_cast<float>(s * dot);
    for (int64_t i = 0; i < y.cols; ++i) v[i] -= k * d[i];
  }
}

void CpuBackend::do_report_sublayer(int layer, Sublayer which, std::span<const RowTag> rows,
                                    Act y) {
  if (observer_ == nullptr) return;
  report_sublayer_to(*observer_, layer, which, rows, {y.data, static_cast<size_t>(y.rows * y.cols)},
                     y.cols);
}

void CpuBackend::do_copy(Act src, Act dst) {
  std::memcpy(dst.data, src.data, sizeof(float) * static_cast<size_t>(src.rows * src.cols));
}

void CpuBackend::do_embed(const Weight& table, std::span<const RowTag> rows, Act out) {
  const int64_t n_embd = table.ne[0], copies = out.cols / n_embd;
  const int64_t row_size = row_bytes(table.type, n_embd);
  for (size_t r = 0; r < rows.size(); ++r) {
    const auto* src = static_cast<const uint8_t*>(table.data) + rows[r].token * row_size;
    float* dst = out.row(static_cast<int64_t>(r));
    if (table.type == gguf::GgufType::kF16) {
      const auto* h = reinterpret_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n_embd; ++i) dst[i] = f16_to_f32(h[i]);
    } else {
      DS4_CHECK(table.type == gguf::GgufType::kF32);
      std::memcpy(dst, src, sizeof(float) * n_embd);
    }
    for (int64_t c = 1; c < copies; ++c) std::memcpy(dst + c * n_embd, dst, sizeof(float) * n_embd);
  }
}

void CpuBackend::do_rms_norm(Act x, const Weight* weight, int64_t segment, Act y) {
  const float* w = weight != nullptr ? static_cast<const float*>(weight->data) : nullptr;
  for (int64_t r = 0; r < x.rows; ++r) {
    for (int64_t s0 = 0; s0 < x.cols; s0 += segment) {
      const float* xs = x.row(r) + s0;
      float* ys = y.row(r) + s0;
      const float s = rms_scale(xs, segment);
      for (int64_t i = 0; i < segment; ++i) ys[i] = w != nullptr ? (xs[i] * s) * w[i] : xs[i] * s;
    }
  }
}

void CpuBackend::do_matmul(const Weight& w, Act x, Act y, int groups) {
  enc_.encode(w.type, x.data, x.rows, x.cols, x.cols);
  cpu::matmul(pool_, k_, w, enc_, x.rows, groups, y);
}

void CpuBackend::do_hc_pre(const HcWeights& hc, Act x, Act cur, Act mix, const Weight* norm,
                           Act normed) {
  const int64_t n_embd = cur.cols, n_hc = x.cols / n_embd;
  // flat = RMSNorm_noweight(X); mix = fn . flat.
  if (static_cast<int64_t>(f_scratch_.size()) < x.rows * x.cols) f_scratch_.resize(x.rows * x.cols);
  Act flat{f_scratch_.data(), x.rows, x.cols};
  do_rms_norm(x, nullptr, x.cols, flat);
  do_matmul(hc.fn, flat, mix, 1);
  const auto* scale = static_cast<const float*>(hc.scale.data);
  const auto* bias = static_cast<const float*>(hc.base.data);
  for (int64_t r = 0; r < x.rows; ++r) {
    float* m = mix.row(r);
    float* pre = m;
    float* post = m + n_hc;
    float* comb = m + 2 * n_hc;
    for (int64_t i = 0; i < n_hc; ++i) {
      pre[i] = 1.0f / (1.0f + detmath::expf(-(pre[i] * scale[0] + bias[i]))) + kEps;
      post[i] = 2.0f / (1.0f + detmath::expf(-(post[i] * scale[1] + bias[n_hc + i])));
    }
    for (int64_t k = 0; k < n_hc * n_hc; ++k) comb[k] = comb[k] * scale[2] + bias[2 * n_hc + k];
    // Sinkhorn (model.md §4.3 step 5): softmax rows, then alternate column / row normalisation.
    for (int64_t a = 0; a < n_hc; ++a) {
      float* row = comb + a * n_hc;
      float mx = kNegInf;
      for (int64_t b = 0; b < n_hc; ++b) mx = std::max(mx, row[b]);
      float sum = 0.0f;
      for (int64_t b = 0; b < n_hc; ++b) sum += (row[b] = detmath::expf(row[b] - mx));
      const float inv = 1.0f / sum;
      for (int64_t b = 0; b < n_hc; ++b) row[b] = row[b] * inv + kEps;
    }
    auto column_pass = [&] {
      for (int64_t b = 0; b < n_hc; ++b) {
        float t = 0.0f;
        for (int64_t a = 0; a < n_hc; ++a) t += comb[a * n_hc + b];
        const float inv = 1.0f / (t + kEps);
        for (int64_t a = 0; a < n_hc; ++a) comb[a * n_hc + b] *= inv;
      }
    };
    column_pass();
    for (int it = 1; it < 20; ++it) {
      for (int64_t a = 0; a < n_hc; ++a) {
        float t = 0.0f;
        for (int64_t b = 0; b < n_hc; ++b) t += comb[a * n_hc + b];
        const float inv = 1.0f / (t + kEps);
        for (int64_t b = 0; b < n_hc; ++b) comb[a * n_hc + b] *= inv;
      }
      column_pass();
    }
    const float* xr = x.row(r);
    float* c = cur.row(r);
    for (int64_t d = 0; d < n_embd; ++d) {
      float acc = 0.0f;
      for (int64_t h = 0; h < n_hc; ++h) acc += xr[h * n_embd + d] * pre[h];
      c[d] = acc;
    }
  }
  if (norm != nullptr) do_rms_norm(cur, norm, n_embd, normed);
}

void CpuBackend::do_hc_post(Act x, Act f, Act mix, Act y) {
  const int64_t n_embd = f.cols, n_hc = x.cols / n_embd;
  for (int64_t r = 0; r < x.rows; ++r) {
    const float* post = mix.row(r) + n_hc;
    const float* comb = mix.row(r) + 2 * n_hc;
    const float* xr = x.row(r);
    const float* fr = f.row(r);
    float* yr = y.row(r);
    for (int64_t b = 0; b < n_hc; ++b) {
      for (int64_t d = 0; d < n_embd; ++d) {
        float acc = fr[d] * post[b];
        for (int64_t a = 0; a < n_hc; ++a) acc += comb[a * n_hc + b] * xr[a * n_embd + d];
        yr[b * n_embd + d] = acc;
      }
    }
  }
}

void CpuBackend::do_output_head(const OutputHead& h, Act x, std::span<const int> which,
                                Act logits) {
  const int64_t n_hc = h.hc.fn.ne[1], n_embd = x.cols / n_hc;
  const auto n = static_cast<int64_t>(which.size());
  // Gather the wanted rows, then flat = RMS0, pre = fn . flat.
  const int64_t need = n * x.cols + n * x.cols + 2 * n * n_embd + n * n_hc;
  if (static_cast<int64_t>(head_scratch_.size()) < need) head_scratch_.resize(need);
  Act xs{head_scratch_.data(), n, x.cols};
  Act flat{xs.data + n * x.cols, n, x.cols};
  Act e{flat.data + n * x.cols, n, n_embd};
  Act normed{e.data + n * n_embd, n, n_embd};
  Act pre{normed.data + n * n_embd, n, n_hc};
  for (int64_t i = 0; i < n; ++i) std::memcpy(xs.row(i), x.row(which[i]), sizeof(float) * x.cols);
  do_rms_norm(xs, nullptr, x.cols, flat);
  do_matmul(h.hc.fn, flat, pre, 1);
  const float scale = *static_cast<const float*>(h.hc.scale.data);
  const auto* bias = static_cast<const float*>(h.hc.base.data);
  for (int64_t i = 0; i < n; ++i) {
    float w[8];
    DS4_CHECK(n_hc <= 8);
    for (int64_t k = 0; k < n_hc; ++k)
      w[k] = sigmoid_stable(pre.row(i)[k] * scale + bias[k]) + kEps;
    for (int64_t d = 0; d < n_embd; ++d) {
      float acc = 0.0f;
      for (int64_t k = 0; k < n_hc; ++k) acc += xs.row(i)[k * n_embd + d] * w[k];
      e.row(i)[d] = acc;
    }
  }
  do_rms_norm(e, &h.norm, n_embd, normed);
  do_matmul(h.output, normed, logits, 1);
}

}  // namespace ds4::backend::cpu
