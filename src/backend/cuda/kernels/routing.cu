// src/backend/cuda/kernels/routing.cu: device expert routing (contract in routing.cuh).
// A CTA of 8 warps forms p for up to 8 token rows together, then one warp per row selects, each
// lane keeping its experts' scores in registers. p =
// sqrt(softplus(logit)) with the project's own exp/log1p (base/det_math.h) and IEEE sqrt, as on the
// CPU. The top-k of p + bias is taken as k rounds of a warp arg-max under the order (larger score,
// then smaller expert id): for scores that are not NaN this picks the same experts in the same
// order as route_token's insertion list (a later expert displaces an earlier one only when strictly
// larger). Selection i's expert and p stay on lane i % 32; every lane forms the weight sum in
// selection order from them by shuffles, and lane i divides its own weight. Built with
// -fmad=false.
#include <climits>

#include "backend/cuda/check.h"
#include "backend/cuda/kernels/device_math.cuh"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/routing.cuh"
#include "base/check.h"

namespace ds4::backend::cuda {
namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kWarp = 32;
constexpr int kWarpsPerCta = 8;  // rows per CTA (a warp each in the selection)
constexpr int kMaxUsed = 64;
constexpr int kMaxPerLane = 16;                     // experts per lane: at most 512 experts
constexpr float kWeightSumFloor = 6.103515625e-5f;  // 2^-14, as backend/routing.cpp

// True when (sa, ia) comes before (sb, ib): larger score first, then the smaller id.
__device__ __forceinline__ bool before(float sa, int ia, float sb, int ib) {
  return sa > sb || (sa == sb && ia < ib);
}

__global__ void route_kernel(float* logits, int64_t n_rows, int n_expert, const float* bias,
                             const int32_t* tid2eid, const int32_t* tokens, int k,
                             float weight_scale, int32_t* sel, float* weights, int32_t* slot_rows) {
  kernel_begin();
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * kWarpsPerCta;  // the CTA's first row
  const int64_t t = t0 + threadIdx.x / kWarp;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  // p of every expert of the CTA's rows, spread over all its threads (a decode row's 256 experts:
  // one per thread, where a warp per row walked eight per lane, each softplus a chain of this
  // project's double-precision log and exp: a long launch for one CTA on the H200). The
  // loop is not unrolled: softplus inlined sixteen times made the kernel ~100 KB of code, fetched
  // from DRAM at each launch (the layer's weights evict it from L2). The values go through
  // shared memory to the registers of the unrolled selection below.
  __shared__ float probs[kWarpsPerCta][kWarp * kMaxPerLane];
  const int64_t left = n_rows - t0;
  const int rows_here = left < kWarpsPerCta ? static_cast<int>(left) : kWarpsPerCta;
#pragma unroll 1
  for (int i = static_cast<int>(threadIdx.x); i < rows_here * n_expert; i += kWarpsPerCta * kWarp) {
    const int r = i / n_expert, e = i % n_expert;
    float* pe = logits + (t0 + r) * n_expert + e;
    const float v = sqrtf(softplus(*pe));
    probs[r][e] = v;
    *pe = v;
  }
  __syncthreads();
  if (t >= n_rows) return;  // uniform per warp, after the CTA's barrier
  const float* mine_probs = probs[threadIdx.x / kWarp];
  // Lane l owns experts l, l + 32, ..: their p + bias in registers, and which are taken.
  float score[kMaxPerLane], prob[kMaxPerLane];
  unsigned taken = 0;
#pragma unroll
  for (int j = 0; j < kMaxPerLane; ++j) {
    const int e = lane + kWarp * j;
    if (e < n_expert) {
      prob[j] = mine_probs[e];
      score[j] = bias != nullptr ? prob[j] + bias[e] : prob[j];
    }
  }
  // Selection i's expert and p live on lane i % 32 (in mine[i / 32]), so that the weight sum and
  // the weights need no reads of what the warp has just written to global memory.
  int32_t mine_id[2] = {0, 0};
  float mine_p[2] = {0.0f, 0.0f};
  auto keep = [&](int i, int32_t e, float pe) {
    if (i % kWarp == lane) {
      if (i < kWarp) {
        mine_id[0] = e, mine_p[0] = pe;
      } else {
        mine_id[1] = e, mine_p[1] = pe;
      }
    }
  };
  if (tid2eid != nullptr) {
    const int32_t* row = tid2eid + static_cast<int64_t>(tokens[t]) * k;
    for (int i = lane; i < k; i += kWarp) {
      const int32_t e = row[i];
      if (e < 0 || e >= n_expert) __trap();  // corrupt hash table
      keep(i, e, mine_probs[e]);
    }
  } else {
    // Round i takes the best expert not taken yet (no score is reserved as a marker); its p
    // travels with it through the arg-max.
    for (int i = 0; i < k; ++i) {
      float best = 0.0f, best_p = 0.0f;
      int best_id = INT_MAX;
#pragma unroll
      for (int j = 0; j < kMaxPerLane; ++j) {
        const int e = lane + kWarp * j;
        if (e >= n_expert || (taken >> j) & 1u) continue;
        if (best_id == INT_MAX || before(score[j], e, best, best_id)) {
          best = score[j], best_id = e, best_p = prob[j];
        }
      }
#pragma unroll
      for (int off = kWarp / 2; off > 0; off >>= 1) {
        const float o_best = __shfl_xor_sync(kFull, best, off);
        const int o_id = __shfl_xor_sync(kFull, best_id, off);
        const float o_p = __shfl_xor_sync(kFull, best_p, off);
        if (o_id != INT_MAX && (best_id == INT_MAX || before(o_best, o_id, best, best_id)))
          best = o_best, best_id = o_id, best_p = o_p;
      }
      if (best_id % kWarp == lane) taken |= 1u << (best_id / kWarp);
      keep(i, best_id, best_p);
    }
  }
  // The sum in selection order (every lane forms the same one), then selection i's weight on its
  // lane: route_token's operations.
  float sum = 0.0f;
  for (int i = 0; i < k; ++i)
    sum += __shfl_sync(kFull, i < kWarp ? mine_p[0] : mine_p[1], i % kWarp);
  sum = fmaxf(sum, kWeightSumFloor);
  for (int h = 0; h < 2; ++h) {
    const int i = lane + kWarp * h;
    if (i < k) {
      sel[t * k + i] = mine_id[h];
      weights[t * k + i] = (mine_p[h] / sum) * weight_scale;
      slot_rows[t * k + i] = static_cast<int32_t>(t);
    }
  }
}

}  // namespace

void launch_route(float* logits, int64_t n_rows, int n_expert, const float* bias,
                  const int32_t* tid2eid, const int32_t* tokens, int k, float weight_scale,
                  int32_t* sel, float* weights, int32_t* slot_rows, cudaStream_t stream) {
  DS4_CHECK_MSG(k >= 1 && k <= kMaxUsed && k <= n_expert && n_expert <= kWarp * kMaxPerLane,
                "route: k=%d of %d experts", k, n_expert);
  DS4_CHECK_MSG(tid2eid == nullptr || tokens != nullptr, "route: hash routing needs the tokens");
  if (n_rows == 0) return;
  const int64_t ctas = (n_rows + kWarpsPerCta - 1) / kWarpsPerCta;
  DS4_CHECK(ctas <= INT_MAX);
  launch(route_kernel, static_cast<unsigned>(ctas), kWarpsPerCta * kWarp, 0, stream, logits, n_rows,
         n_expert, bias, tid2eid, tokens, k, weight_scale, sel, weights, slot_rows);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::backend::cuda
