// src/backend/cuda/kernels/topk.cu: device top-k selection (contract in topk.cuh).
// One CTA. Scores map to unsigned keys that sort like the scores (sign-magnitude flipped; -0.0
// folded onto +0.0; NaN to key 0). A four-pass radix select (8 bits per pass, most significant
// first) finds the k-th largest key T and how many elements equal to T belong to the answer (the
// lowest-indexed ones); a final pass walks the scores in index order and writes every element
// above T and the first `need` equal to T, with block-wide prefix counts, so the output is in
// ascending index order.
#include <climits>

#include "backend/cuda/check.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/topk.cuh"
#include "base/check.h"

namespace ds4::backend::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;

__device__ __forceinline__ uint32_t score_key(float s) {
  uint32_t u = __float_as_uint(s);
  if (s != s) return 0u;         // NaN: below everything
  if (u == 0x80000000u) u = 0u;  // -0.0 == +0.0
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// Exclusive prefix count of `flag` over the CTA's threads in thread order; *total gets the sum.
// Uses warp_counts[kWarps] of shared memory; every thread must call it.
__device__ int block_exclusive_count(bool flag, int* warp_counts, int* total) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const unsigned ballot = __ballot_sync(0xffffffffu, flag);
  const int in_warp = __popc(ballot & ((1u << lane) - 1u));
  if (lane == 0) warp_counts[warp] = __popc(ballot);
  __syncthreads();
  int before = 0, sum = 0;
  for (int w = 0; w < kWarps; ++w) {
    const int c = warp_counts[w];
    before += w < warp ? c : 0;
    sum += c;
  }
  __syncthreads();  // warp_counts may be rewritten by the next call
  *total = sum;
  return before + in_warp;
}

// Row blockIdx.x: n_fixed > 0 selects among n_fixed scores, else among (p0 + row + 1) / ratio.
__global__ void __launch_bounds__(kThreads)
    select_top_k_kernel(const float* all_scores, int64_t stride, int n_fixed, int p0, int ratio,
                        int k, int32_t* all_out) {
  kernel_begin();
  const int row = static_cast<int>(blockIdx.x);
  const int n = n_fixed > 0 ? n_fixed : (p0 + row + 1) / ratio;
  if (n <= k) return;  // uniform per CTA
  const float* scores = all_scores + row * stride;
  int32_t* out = all_out + static_cast<int64_t>(row) * k;
  __shared__ unsigned hist[256];
  __shared__ unsigned s_digit, s_need;
  __shared__ int warp_counts[kWarps];
  const int tid = static_cast<int>(threadIdx.x);

  uint32_t prefix = 0, mask = 0;
  unsigned need = static_cast<unsigned>(k);
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = tid; i < 256; i += kThreads) hist[i] = 0;
    __syncthreads();
    for (int i = tid; i < n; i += kThreads) {
      const uint32_t key = score_key(scores[i]);
      if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 255u], 1u);
    }
    __syncthreads();
    // The largest digit d with (count of larger digits) + hist[d] >= need, as a serial walk
    // from digit 255 down would find it: lane l holds digits 255 - 8l .. 248 - 8l, a prefix sum
    // over the lanes finds the lane, and that lane walks its eight digits.
    if (tid < 32) {
      unsigned c[8], local = 0;
#pragma unroll
      for (int j = 0; j < 8; ++j) local += (c[j] = hist[255 - 8 * tid - j]);
      unsigned incl = local;
#pragma unroll
      for (int off = 1; off < 32; off *= 2) {
        const unsigned v = __shfl_up_sync(0xffffffffu, incl, off);
        if (tid >= off) incl += v;
      }
      const unsigned found = __ballot_sync(0xffffffffu, incl >= need);
      if (found != 0 && tid == __ffs(found) - 1) {
        unsigned above = incl - local;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          if (above + c[j] >= need) {
            s_digit = static_cast<unsigned>(255 - 8 * tid - j);
            s_need = need - above;
            break;
          }
          above += c[j];
        }
      }
    }
    __syncthreads();
    prefix |= s_digit << shift;
    mask |= 255u << shift;
    need = s_need;
    __syncthreads();
  }

  // prefix is the k-th largest key; `need` elements equal to it are taken, lowest index first.
  int taken = 0, equal_seen = 0;
  for (int base = 0; base < n; base += kThreads) {
    const int i = base + tid;
    const uint32_t key = i < n ? score_key(scores[i]) : 0u;
    const bool eq = i < n && key == prefix;
    int eq_total = 0, take_total = 0;
    const int eq_rank = equal_seen + block_exclusive_count(eq, warp_counts, &eq_total);
    const bool take = i < n && (key > prefix || (eq && eq_rank < static_cast<int>(need)));
    const int pos = taken + block_exclusive_count(take, warp_counts, &take_total);
    if (take) out[pos] = i;
    equal_seen += eq_total;
    taken += take_total;
  }
}

}  // namespace

void launch_select_top_k(const float* scores, int n, int k, int32_t* out, cudaStream_t stream) {
  DS4_CHECK_MSG(k > 0 && k < n, "top-k: k=%d of n=%d", k, n);
  launch(select_top_k_kernel, 1, kThreads, 0, stream, scores, 0, n, 0, 1, k, out);
  DS4_CUDA_CHECK_LAUNCH();
}

void launch_select_top_k_rows(const float* scores, int64_t stride, int p0, int n_rows, int ratio,
                              int k, int32_t* out, cudaStream_t stream) {
  DS4_CHECK_MSG(k > 0 && ratio > 0 && p0 >= 0 && n_rows >= 0 && stride >= (p0 + n_rows) / ratio,
                "top-k rows: k=%d ratio=%d p0=%d rows=%d stride=%lld", k, ratio, p0, n_rows,
                static_cast<long long>(stride));
  if (n_rows == 0) return;
  launch(select_top_k_kernel, n_rows, kThreads, 0, stream, scores, stride, 0, p0, ratio, k, out);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::backend::cuda
