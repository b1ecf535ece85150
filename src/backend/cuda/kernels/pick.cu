// src/backend/cuda/kernels/pick.cu: the pick kernel (contract in pick.cuh). One CTA of 1,024
// threads per row. The argmax and the largest finite logit are block reductions; for a draw,
// thread t owns the ids of one contiguous chunk, sums its weights in id order, a block scan gives
// each chunk the sum of the chunks before it, and the thread whose chunk holds the point
// uniform * sum walks it as the host walks the whole list. Built without FMA contraction
// (-fmad=false), so a weight rounds as the host's does up to expf's last bit.
#include <climits>

#include "backend/cuda/check.h"
#include "backend/cuda/kernels/device_math.cuh"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/pick.cuh"

namespace ds4::backend::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;

__device__ __forceinline__ bool finite_logit(float v) { return v > kNegInf && isfinite(v); }

// (value, id) with the host argmax's order: a larger value first, then the lower id; id INT_MAX
// stands for none.
struct Best {
  float v;
  int i;
};
__device__ __forceinline__ Best better(Best a, Best b) {
  if (b.i == INT_MAX) return a;
  if (a.i == INT_MAX) return b;
  return (b.v > a.v || (b.v == a.v && b.i < a.i)) ? b : a;
}

__device__ Best block_best(Best x, Best* scratch) {
  for (int o = 16; o > 0; o >>= 1) {
    const Best y{__shfl_xor_sync(0xffffffffu, x.v, o), __shfl_xor_sync(0xffffffffu, x.i, o)};
    x = better(x, y);
  }
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  if (warp == 0) {
    x = scratch[lane];
    for (int o = 16; o > 0; o >>= 1) {
      const Best y{__shfl_xor_sync(0xffffffffu, x.v, o), __shfl_xor_sync(0xffffffffu, x.i, o)};
      x = better(x, y);
    }
    if (lane == 0) scratch[0] = x;
  }
  __syncthreads();
  const Best r = scratch[0];
  __syncthreads();  // scratch may be rewritten by the next call
  return r;
}

// The running sum of v before each thread (starts[t], a scan) and after the last
// (starts[kThreads]): thread t's share of the total is [starts[t], starts[t + 1]), so the shares
// tile the total with neither gap nor overlap whatever the scan's roundings.
__device__ void block_starts(float v, float* warp_sums, float* starts) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  float incl = v;
  for (int o = 1; o < 32; o <<= 1) {
    const float y = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += y;
  }
  float excl = __shfl_up_sync(0xffffffffu, incl, 1);
  if (lane == 0) excl = 0.0f;
  if (lane == 31) warp_sums[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    float wi = warp_sums[lane];
    for (int o = 1; o < 32; o <<= 1) {
      const float y = __shfl_up_sync(0xffffffffu, wi, o);
      if (lane >= o) wi += y;
    }
    float we = __shfl_up_sync(0xffffffffu, wi, 1);
    if (lane == 0) we = 0.0f;
    warp_sums[lane] = we;  // the warps before
    if (lane == 31) starts[kThreads] = wi;
  }
  __syncthreads();
  starts[threadIdx.x] = warp_sums[warp] + excl;
  __syncthreads();
}

__global__ void __launch_bounds__(kThreads)
    pick_kernel(const PickRowArgs* rows, int n_vocab, PickResult* out) {
  kernel_begin();
  const PickRowArgs r = rows[blockIdx.x];
  const float* x = r.logits;
  const int tid = static_cast<int>(threadIdx.x);
  __shared__ Best best_scratch[kWarps];
  __shared__ float warp_sums[kWarps];
  __shared__ float starts[kThreads + 1];
  __shared__ int s_pick;

  Best arg{kNegInf, INT_MAX}, top{kNegInf, INT_MAX};  // argmax; largest finite logit
  for (int i = tid; i < n_vocab; i += kThreads) {
    const float v = x[i];
    if (v > kNegInf) arg = better(arg, Best{v, i});  // NaN and values <= -1e30 never win
    if (finite_logit(v)) top = better(top, Best{v, i});
  }
  arg = block_best(arg, best_scratch);
  const int argmax = arg.i == INT_MAX ? 0 : arg.i;
  const bool greedy = !(r.temperature > 0.0f);
  if (greedy) {
    if (tid == 0) out[blockIdx.x] = PickResult{argmax, 0};
    return;
  }
  top = block_best(top, best_scratch);
  if (top.i == INT_MAX) {  // no finite logit: the argmax, and no uniform used
    if (tid == 0) out[blockIdx.x] = PickResult{argmax, 0};
    return;
  }
  const float max = top.v, t = r.temperature, min_p = r.min_p;
  const float cut = min_p > 0.0f ? logf(min_p) - 0.01f : -INFINITY;
  auto weight = [&](float v) -> float {
    if (!finite_logit(v)) return 0.0f;
    const float z = (v - max) / t;
    if (z < cut) return 0.0f;
    const float p = expf(z);
    return p < min_p ? 0.0f : p;
  };
  const int chunk = (n_vocab + kThreads - 1) / kThreads;
  const int lo = min(n_vocab, tid * chunk), hi = min(n_vocab, lo + chunk);
  float mine = 0.0f;
  for (int i = lo; i < hi; ++i) mine += weight(x[i]);
  if (tid == 0) s_pick = INT_MAX;
  block_starts(mine, warp_sums, starts);
  const float before = starts[tid], point = r.uniform * starts[kThreads];
  // The first id of nonzero weight whose running sum reaches the point: in this chunk when the
  // chunks before fall short of it (or it is 0 and they hold nothing) and this one reaches it.
  const bool here = mine > 0.0f && (before < point || (point == 0.0f && before == 0.0f)) &&
                    point <= starts[tid + 1];
  if (here) {
    float left = point - before;
    int last = -1;
    for (int i = lo; i < hi; ++i) {
      const float w = weight(x[i]);
      if (w == 0.0f) continue;
      last = i;
      left -= w;
      if (left <= 0.0f) break;
    }
    atomicMin(&s_pick, last);  // rounding that leaves the walk short takes the chunk's last
  }
  __syncthreads();
  if (tid == 0) out[blockIdx.x] = PickResult{s_pick == INT_MAX ? argmax : s_pick, 1};
}

}  // namespace

void launch_pick(const PickRowArgs* rows, int n_rows, int n_vocab, PickResult* out,
                 cudaStream_t stream) {
  if (n_rows <= 0) return;
  launch(pick_kernel, dim3(static_cast<unsigned>(n_rows)), dim3(kThreads), 0, stream, rows, n_vocab,
         out);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::backend::cuda
