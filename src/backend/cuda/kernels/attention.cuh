// src/backend/cuda/kernels/attention.cuh: the cache-dependent steps of one token row of an
// attention sublayer on the device (model.md §4.5-4.9): RoPE + FP8 simulation + raw-window store,
// compressor frontier store / pooling / row finishing, indexer query preparation and scores, and
// sink attention with inverse RoPE. The host walks the rows in order (backend/cuda/attention.cpp).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/backend.h"
#include "gguf/types.h"

namespace ds4::backend::cuda {

struct RopeArg {
  float inv_freq[32];
};

// Rotates the tails of q's n_head heads and of kv at pos; simulates FP8 on kv dims 0..447 (qat),
// rounds kv through f16 (f16_rows) and stores it at raw_slot.
void launch_rope_qkv_store(float* q, int n_head, float* kv, const RopeArg& rope, int pos, bool qat,
                           bool f16_rows, float* raw_slot, cudaStream_t s);
// Frontier row rho <- (kvc, gate + ape[t]) for a lane of width W (ape F16 or F32, [ratio][W]).
void launch_compressor_store(float* st_kv, float* st_score, int rho, int width, const float* kvc,
                             const float* gate, const void* ape, gguf::GgufType ape_type, int t,
                             cudaStream_t s);
// Softmax-gated pooling of a full window into dst (hd values), model.md §4.7 step 5.
void launch_compressor_pool(const float* st_kv, const float* st_score, int ratio, int hd,
                            float* dst, cudaStream_t s);
// RMSNorm (weight), RoPE at pos_start, simulation (attention lane: FP8; indexer lane: Hadamard +
// FP4) and f16 rounding of a pooled row, in place.
void launch_finish_row(float* row, int hd, const float* norm, const RopeArg& rope, int pos_start,
                       bool indexer_lane, bool qat, bool f16_rows, cudaStream_t s);
// RoPE at pos and (qat) Hadamard + FP4 on each of the n_ih 128-wide indexer query heads.
void launch_indexer_query(float* iq, int n_ih, const RopeArg& rope, int pos, bool qat,
                          cudaStream_t s);
// scores[c] = sum_h max(0, keys[c] . iq_h) * w[h] * wscale for c < n.
void launch_indexer_scores(const float* keys, int n, const float* iq, const float* w, float wscale,
                           int n_ih, float* scores, cudaStream_t s);
// Sink attention of the row's n_head queries over the n_raw ring rows (oldest at raw_head) and the
// compressed rows listed in `visible` (nullptr: rows 0..n_comp-1), then inverse RoPE at pos.
// scratch: n_head * (n_raw + n_comp) floats.
void launch_attention(const float* q, int n_head, const float* raw, int raw_cap, int raw_head,
                      int n_raw, const float* comp, const int32_t* visible, int n_comp,
                      const float* sinks, const RopeArg& rope, int pos, float* scratch, float* out,
                      cudaStream_t s);

}  // namespace ds4::backend::cuda
