// src/backend/cuda/kernels/routing.cuh: expert selection on the device (model.md §4.10 steps
// 3-5), the twin of backend/routing.cpp's route_token, so an FFN op never waits for the host.
// Owns: the routing kernel and its launcher. Does not own: the routing rules' definition
// (backend/routing.h is the reference and documents them).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ds4::backend::cuda {

// For each token row t < n_rows: logits[t] (n_expert floats, device) becomes p = sqrt(softplus);
// sel[t * k + i] / weights[t * k + i] receive the experts and routing weights exactly as
// route_token computes them, and slot_rows[t * k + i] = t. tid2eid (device, [n_vocab][k]) and
// tokens (device, one per row) select hash routing when tid2eid is given; bias may be null.
// A hash-table entry outside [0, n_expert) stops the kernel (a corrupt model).
// Requires 1 <= k <= 64 and k <= n_expert.
void launch_route(float* logits, int64_t n_rows, int n_expert, const float* bias,
                  const int32_t* tid2eid, const int32_t* tokens, int k, float weight_scale,
                  int32_t* sel, float* weights, int32_t* slot_rows, cudaStream_t stream);

}  // namespace ds4::backend::cuda
