// src/backend/cuda/attention.cpp: the host walk of an attention op on the device, one token row
// at a time in batch order (the same order as the CPU reference): RoPE + FP8 + raw store,
// compressor steps, indexer scores and top-k (both on the device), sink attention. Nothing here
// waits for the device.
#include "backend/cuda/kernels/attention.cuh"
#include "backend/cuda/kernels/topk.cuh"

#include <algorithm>
#include <cmath>

#include "backend/cuda/check.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/row_rules.h"

namespace ds4::backend::cuda {
namespace {

constexpr int kHd = 512;
constexpr int kIhd = 128;

RopeArg rope_arg(const RopeParams& p) {
  RopeArg a;
  std::copy(p.inv_freq.begin(), p.inv_freq.end(), a.inv_freq);
  return a;
}

// One compressor lane step; true when a row was emitted into dst.
bool compressor_step(int ratio, int hd, DeviceMemory& st_kv, DeviceMemory& st_score,
                     const float* kvc, const float* gate, const Weight& ape, int pos, float* dst,
                     cudaStream_t s) {
  const int width = (ratio == 4 ? 2 : 1) * hd;
  const int rho = ratio == 4 ? 4 + pos % 4 : pos % ratio;
  launch_compressor_store(st_kv.floats(), st_score.floats(), rho, width, kvc, gate, ape.data,
                          ape.type, pos % ratio, s);
  if ((pos + 1) % ratio != 0) return false;
  launch_compressor_pool(st_kv.floats(), st_score.floats(), ratio, hd, dst, s);
  if (ratio == 4) {  // the current window becomes the previous one
    const size_t half = sizeof(float) * 4 * width;
    DS4_CUDA_CHECK(cudaMemcpyAsync(st_kv.get(), st_kv.floats() + 4 * width, half,
                                   cudaMemcpyDeviceToDevice, s));
    DS4_CUDA_CHECK(cudaMemcpyAsync(st_score.get(), st_score.floats() + 4 * width, half,
                                   cudaMemcpyDeviceToDevice, s));
  }
  return true;
}

}  // namespace

void CudaBackend::do_attention(int il, const AttentionLayer& l, std::span<const RowTag> rows,
                               const AttentionInputs& in, Act out) {
  for (size_t r = 0; r < rows.size(); ++r) {
    DeviceSequence& s = sequence(rows[r].seq);
    DS4_CHECK(il >= 0 && il < static_cast<int>(s.layers.size()));
    DeviceLayer& c = s.layers[il];
    check_row_continues(il, c.lay.ratio, l.ratio, c.n_tokens, s.layout.n_ctx, rows[r]);
    attend_row(il, l, c, rows[r], in, static_cast<int64_t>(r), out.row(static_cast<int64_t>(r)));
  }
}

void CudaBackend::attend_row(int, const AttentionLayer& l, DeviceLayer& c, const RowTag& row,
                             const AttentionInputs& in, int64_t r, float* out) {
  const Numerics& num = numerics();
  const int pos = row.pos;
  const RopeArg rope = rope_arg(l.rope);
  const int slot = raw_ring_push(&c.raw_head, &c.n_raw, c.lay.raw_cap);
  launch_rope_qkv_store(in.q.row(r), l.n_head, in.kv.row(r), rope, pos, num.qat_simulation,
                        num.f16_rows, c.raw.floats() + int64_t{slot} * kHd, stream_);
  if (l.ratio != 0) {
    DS4_CHECK(c.n_comp < c.lay.comp_cap);
    float* dst = c.comp.floats() + int64_t{c.n_comp} * kHd;
    if (compressor_step(l.ratio, kHd, c.comp_kv, c.comp_score, in.comp_kv.row(r),
                        in.comp_gate.row(r), l.comp_ape, pos, dst, stream_)) {
      launch_finish_row(dst, kHd, static_cast<const float*>(l.comp_norm.data), rope,
                        pos + 1 - l.ratio, false, num.qat_simulation, num.f16_rows, stream_);
      ++c.n_comp;
    }
  }
  const int32_t* visible = nullptr;
  int n_visible = c.n_comp;
  if (l.ratio == 4) {
    DS4_CHECK(c.n_index < c.lay.comp_cap);
    float* dst = c.index.floats() + int64_t{c.n_index} * kIhd;
    if (compressor_step(4, kIhd, c.index_kv, c.index_score, in.index_kv.row(r),
                        in.index_gate.row(r), l.index_ape, pos, dst, stream_)) {
      launch_finish_row(dst, kIhd, static_cast<const float*>(l.index_norm.data), rope, pos + 1 - 4,
                        true, num.qat_simulation, num.f16_rows, stream_);
      ++c.n_index;
    }
    DS4_CHECK(c.n_index == c.n_comp);
    if (c.n_index > l.index_top_k) {
      const int n = c.n_index;
      launch_indexer_query(in.index_q.row(r), l.n_index_head, rope, pos, num.qat_simulation,
                           stream_);
      const float wscale = 1.0f / std::sqrt(static_cast<float>(kIhd * l.n_index_head));
      float* scores = scratch(index_scores_, n);
      launch_indexer_scores(c.index.floats(), n, in.index_q.row(r), in.index_w.row(r), wscale,
                            l.n_index_head, scores, stream_);
      visible_.reserve(sizeof(int32_t) * static_cast<size_t>(l.index_top_k));
      launch_select_top_k(scores, n, l.index_top_k, static_cast<int32_t*>(visible_.get()),
                          stream_);
      visible = static_cast<const int32_t*>(visible_.get());
      n_visible = l.index_top_k;
    }
  }
  float* sc = scratch(scores_, int64_t{l.n_head} * (c.n_raw + n_visible));
  launch_attention(in.q.row(r), l.n_head, c.raw.floats(), c.lay.raw_cap, c.raw_head, c.n_raw,
                   c.comp.floats(), visible, n_visible, static_cast<const float*>(l.sinks.data),
                   rope, pos, sc, out, stream_);
  ++c.n_tokens;
}

}  // namespace ds4::backend::cuda
