// src/backend/cuda/kernels/pick.cuh: next-token picks on the device (issue 55: only the chosen ids
// go back to the host), the twin of the host sampler's greedy and whole-vocabulary draws
// (src/sampling/sampler.cpp, model.md §7). Owns: the pick kernel and its launcher. Does not own:
// the rules (the sampler defines them) or the uniform (the host draws it from the request's
// generator, so a seed gives the same sequence of uniforms either way).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ds4::backend::cuda {

// One row to pick from: `logits` (n_vocab floats, device memory). temperature <= 0: the argmax
// (the first largest value; NaN skipped; 0 when no value exceeds -1e30). Otherwise the
// whole-vocabulary draw at `uniform` in [0, 1): weights exp((logit - max) / temperature) of the
// finite logits (> -1e30), zero under min_p (relative to the best token's), walked in id order to
// the first whose running sum reaches uniform * sum (the sums are taken in another order than the
// host's, so a uniform within rounding of a boundary may pick the neighbour); the argmax when no
// logit is finite (then `drew` is 0: the draw used no uniform) or the walk finds none.
struct PickRowArgs {
  const float* logits = nullptr;
  float temperature = 0.0f;
  float min_p = 0.0f;
  float uniform = 0.0f;
};
struct PickResult {
  int32_t token = 0;
  int32_t drew = 0;
};

// out[i] for rows[i], i < n_rows (both device memory); one CTA per row.
void launch_pick(const PickRowArgs* rows, int n_rows, int n_vocab, PickResult* out,
                 cudaStream_t stream);

}  // namespace ds4::backend::cuda
