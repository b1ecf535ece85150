// src/backend/cpu/attention.cpp: the cache-dependent half of an attention sublayer, one token row
// at a time in batch order (model.md §4.5 steps 5-11, §4.7-4.9): RoPE, FP8 simulation, raw window
// append, compressor frontier steps, lightning-indexer top-k, sink attention, inverse RoPE.
// Processing rows in order makes a prefill batch compute exactly what token-by-token decode does.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>

#include "backend/cpu/axpy.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/indexer_scores.h"
#include "backend/cpu/math.h"
#include "backend/rope.h"
#include "backend/row_rules.h"
#include "base/check.h"
#include "base/f16.h"
#include "quant/lowp_sim.h"

namespace ds4::backend::cpu {
namespace {

constexpr int kHd = 512;   // attention head / KV row width
constexpr int kIhd = 128;  // indexer head width
constexpr int kNope = 448;

float weight_at(const Weight& w, int64_t i) {
  if (w.type == gguf::GgufType::kF16) return f16_to_f32(static_cast<const uint16_t*>(w.data)[i]);
  DS4_CHECK(w.type == gguf::GgufType::kF32);
  return static_cast<const float*>(w.data)[i];
}

void round_f16(float* x, int n) {
  for (int i = 0; i < n; ++i) x[i] = f16_round(x[i]);
}

// One compressor lane step (model.md §4.7). Returns true and fills `pooled` (hd floats) when the
// token completes a window.
bool compressor_step(int ratio, int hd, std::vector<float>& st_kv, std::vector<float>& st_score,
                     const float* kvc, const float* gate, const Weight& ape, int pos,
                     float* pooled) {
  const int coff = ratio == 4 ? 2 : 1, width = coff * hd;
  const int t = pos % ratio;
  const int rho = ratio == 4 ? 4 + pos % 4 : t;
  float* kv_row = &st_kv[size_t(rho) * width];
  float* sc_row = &st_score[size_t(rho) * width];
  std::memcpy(kv_row, kvc, sizeof(float) * width);
  for (int j = 0; j < width; ++j) sc_row[j] = gate[j] + weight_at(ape, int64_t{t} * width + j);
  if ((pos + 1) % ratio != 0) return false;
  for (int j = 0; j < hd; ++j) {
    float m = kNegInf;
    if (ratio == 4) {
      for (int r = 0; r < 4; ++r) {
        m = std::max(m, st_score[size_t(r) * width + j]);
        m = std::max(m, st_score[size_t(4 + r) * width + hd + j]);
      }
    } else {
      for (int r = 0; r < ratio; ++r) m = std::max(m, st_score[size_t(r) * width + j]);
    }
    if (m <= kEmptyBelow) {
      pooled[j] = 0.0f;
      continue;
    }
    float den = 0.0f, sum = 0.0f;
    if (ratio == 4) {
      for (int r = 0; r < 4; ++r) {
        const size_t p = size_t(r) * width + j, c = size_t(4 + r) * width + hd + j;
        const float wp = detmath::expf(st_score[p] - m), wc = detmath::expf(st_score[c] - m);
        den += wp + wc;
        sum += wp * st_kv[p];
        sum += wc * st_kv[c];
      }
    } else {
      for (int r = 0; r < ratio; ++r) {
        const size_t p = size_t(r) * width + j;
        const float w = detmath::expf(st_score[p] - m);
        den += w;
        sum += w * st_kv[p];
      }
    }
    pooled[j] = den > 0.0f ? sum / den : 0.0f;
  }
  if (ratio == 4) {  // the current window becomes the previous one
    std::memcpy(st_kv.data(), &st_kv[size_t(4) * width], sizeof(float) * 4 * width);
    std::memcpy(st_score.data(), &st_score[size_t(4) * width], sizeof(float) * 4 * width);
  }
  return true;
}

// Norm, RoPE at the window start, simulation and f16 rounding of a freshly pooled row.
void finish_row(float* row, int hd, const Weight& norm, const RopeParams& rope, int pos_start,
                bool indexer_lane, const Numerics& num) {
  const float s = rms_scale(row, hd);
  const auto* w = static_cast<const float*>(norm.data);
  for (int i = 0; i < hd; ++i) row[i] = (row[i] * s) * w[i];
  float c[kRopePairs], sn[kRopePairs];
  rope_cos_sin(rope, pos_start, c, sn);
  rope_rotate(c, sn, row + hd - 2 * kRopePairs, false);
  if (num.qat_simulation) {
    if (indexer_lane) {
      quant::indexer_fp4_simulate(std::span<float>(row, kIhd));
    } else {
      quant::fp8_kv_simulate(std::span<float>(row, kHd));
    }
  }
  if (num.f16_rows) round_f16(row, hd);
}

}  // namespace

void CpuBackend::do_attention(int il, const AttentionLayer& l, std::span<const RowTag> rows,
                              const AttentionInputs& in, Act out) {
  for (size_t r = 0; r < rows.size(); ++r) {
    Sequence& s = sequence(rows[r].seq);
    DS4_CHECK(il >= 0 && il < static_cast<int>(s.layers.size()));
    LayerCache& c = s.layers[il];
    check_row_continues(il, c.lay.ratio, l.ratio, c.n_tokens, s.layout.n_ctx, rows[r]);
    attend_row(l, c, rows[r], in, static_cast<int64_t>(r), out.row(static_cast<int64_t>(r)));
  }
}

void CpuBackend::attend_row(const AttentionLayer& l, LayerCache& c, const RowTag& row,
                            const AttentionInputs& in, int64_t r, float* out) {
  const Numerics& num = numerics();
  const int pos = row.pos;
  float cs[kRopePairs], sn[kRopePairs];
  rope_cos_sin(l.rope, pos, cs, sn);
  float* q = in.q.row(r);
  float* kv = in.kv.row(r);
  for (int h = 0; h < l.n_head; ++h) rope_rotate(cs, sn, q + h * kHd + kNope, false);
  rope_rotate(cs, sn, kv + kNope, false);
  if (num.qat_simulation) quant::fp8_kv_simulate(std::span<float>(kv, kHd));
  if (num.f16_rows) round_f16(kv, kHd);

  if (c.logging) c.undo.push_back(record_row(c, pos, kHd));
  // Raw window append (the oldest row leaves first when full).
  const int slot = raw_ring_push(&c.raw_head, &c.n_raw, c.lay.raw_cap);
  std::memcpy(&c.raw[size_t(slot) * kHd], kv, sizeof(float) * kHd);

  if (l.ratio != 0) {
    DS4_CHECK(c.n_comp < c.lay.comp_cap);  // capacity ctx / ratio + 2 > rows emitted before ctx
    float* dst = &c.comp[size_t(c.n_comp) * kHd];
    if (compressor_step(l.ratio, kHd, c.comp_kv, c.comp_score, in.comp_kv.row(r),
                        in.comp_gate.row(r), l.comp_ape, pos, dst)) {
      finish_row(dst, kHd, l.comp_norm, l.rope, pos + 1 - l.ratio, false, num);
      ++c.n_comp;
    }
  }
  const int32_t* visible = nullptr;  // nullptr: every compressed row
  int n_visible = c.n_comp;
  if (l.ratio == 4) {
    DS4_CHECK(c.n_index < c.lay.comp_cap);
    float* dst = &c.index[size_t(c.n_index) * kIhd];
    if (compressor_step(4, kIhd, c.index_kv, c.index_score, in.index_kv.row(r),
                        in.index_gate.row(r), l.index_ape, pos, dst)) {
      finish_row(dst, kIhd, l.index_norm, l.rope, pos + 1 - 4, true, num);
      ++c.n_index;
    }
    DS4_CHECK(c.n_index == c.n_comp);
    if (c.n_index > l.index_top_k) {
      indexer_select(l, c, row, in, r);
      visible = visible_.data();
      n_visible = static_cast<int>(visible_.size());
    }
  }

  // Sink attention per head (model.md §4.9), heads in parallel.
  const int n_rows = c.n_raw + n_visible;
  if (static_cast<int64_t>(scores_.size()) < int64_t{l.n_head} * n_rows) {
    scores_.resize(size_t(l.n_head) * n_rows);
  }
  const auto* sinks = static_cast<const float*>(l.sinks.data);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHd));
  auto row_ptr = [&](int i) -> const float* {
    if (i < c.n_raw) return &c.raw[size_t((c.raw_head + i) % c.lay.raw_cap) * kHd];
    const int k = i - c.n_raw;
    return &c.comp[size_t(visible != nullptr ? visible[k] : k) * kHd];
  };
  static const AxpyFn axpy = best_axpy_fma();
  pool_.parallel_for(l.n_head, [&](int64_t h) {
    const float* qh = q + h * kHd;
    float* sc = &scores_[size_t(h) * n_rows];
    float m = sinks[h];
    for (int i = 0; i < n_rows; ++i) {
      sc[i] = k_.f32(qh, row_ptr(i), kHd) * scale;
      m = std::max(m, sc[i]);
    }
    float den = detmath::expf(sinks[h] - m);
    float* o = out + h * kHd;
    std::fill(o, o + kHd, 0.0f);
    for (int i = 0; i < n_rows; ++i) {  // o += w x row, one fused multiply-add per dim
      const float w = detmath::expf(sc[i] - m);
      den += w;
      axpy(w, row_ptr(i), o, kHd);
    }
    const float inv = 1.0f / den;
    for (int d = 0; d < kHd; ++d) o[d] *= inv;
    rope_rotate(cs, sn, o + kNope, true);
  });
  ++c.n_tokens;
}

// Lightning indexer (model.md §4.8): keeps the index_top_k best compressed rows, lowest index on
// ties, in ascending order in visible_.
void CpuBackend::indexer_select(const AttentionLayer& l, LayerCache& c, const RowTag& row,
                                const AttentionInputs& in, int64_t r) {
  const Numerics& num = numerics();
  float cs[kRopePairs], sn[kRopePairs];
  rope_cos_sin(l.rope, row.pos, cs, sn);
  float* iq = in.index_q.row(r);
  for (int h = 0; h < l.n_index_head; ++h) {
    float* head = iq + h * kIhd;
    rope_rotate(cs, sn, head + kIhd - 2 * kRopePairs, false);
    if (num.qat_simulation) quant::indexer_fp4_simulate(std::span<float>(head, kIhd));
  }
  const float wscale = 1.0f / std::sqrt(static_cast<float>(kIhd * l.n_index_head));
  float w[256];
  DS4_CHECK(l.n_index_head <= 256);
  for (int h = 0; h < l.n_index_head; ++h) w[h] = in.index_w.row(r)[h] * wscale;
  const int n = c.n_index;
  if (static_cast<int>(index_scores_.size()) < n) index_scores_.resize(n);
  const IndexerScoresFn score_rows = best_indexer_scores(l.n_index_head);
  constexpr int kRowsPerTask = 256;
  pool_.parallel_for((n + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t task) {
    const int begin = static_cast<int>(task) * kRowsPerTask;
    const int end = std::min(n, begin + kRowsPerTask);
    score_rows(&c.index[size_t(begin) * kIhd], end - begin, iq, w, l.n_index_head,
               &index_scores_[begin]);
  });
  select_top_k(index_scores_.data(), n, l.index_top_k, &index_order_, &visible_);
}

}  // namespace ds4::backend::cpu
