// src/backend/cuda/moe.cpp: the FFN op on the device. Router logits come to the host for the
// selection (backend/routing.h, shared with the CPU); gate/up/down run as slot matmuls over the
// selected experts; the routing weight multiplies the SwiGLU output before the down projection.
#include "backend/cuda/check.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/dense.cuh"
#include "backend/routing.h"

namespace ds4::backend::cuda {

void CudaBackend::do_moe(const MoeLayer& l, std::span<const RowTag> rows, Act n, Act out) {
  const int64_t t_rows = n.rows, n_embd = n.cols, n_exp = l.router.ne[1];
  const int64_t n_ff = l.gate_exps.ne[1], k = l.n_expert_used, slots = t_rows * k;
  // Router logits to the host; selection and weights there.
  float* logits = scratch(tmp_a_, t_rows * n_exp);
  matmul_slots(l.router, n.data, t_rows, n_embd, nullptr, nullptr, t_rows, 1, logits);
  host_floats_.resize(static_cast<size_t>(t_rows * n_exp + slots));
  DS4_CUDA_CHECK(cudaMemcpyAsync(host_floats_.data(), logits, sizeof(float) * t_rows * n_exp,
                                 cudaMemcpyDeviceToHost, stream_));
  DS4_CUDA_CHECK(cudaStreamSynchronize(stream_));
  const auto* bias = l.bias.present() ? static_cast<const float*>(host_of(l.bias)) : nullptr;
  const auto* table =
      l.tid2eid.present() ? static_cast<const int32_t*>(host_of(l.tid2eid)) : nullptr;
  host_ints_.resize(static_cast<size_t>(2 * slots));
  int32_t* sel = host_ints_.data();
  int32_t* slot_rows = sel + slots;
  float* weights = host_floats_.data() + t_rows * n_exp;
  for (int64_t t = 0; t < t_rows; ++t) {
    route_token(host_floats_.data() + t * n_exp, static_cast<int>(n_exp), bias,
                table != nullptr ? table + int64_t{rows[t].token} * k : nullptr,
                static_cast<int>(k), l.weight_scale, sel + t * k, weights + t * k);
    for (int64_t i = 0; i < k; ++i) slot_rows[t * k + i] = static_cast<int32_t>(t);
  }
  ints_.reserve(sizeof(int32_t) * 2 * slots);
  auto* d_sel = static_cast<int32_t*>(ints_.get());
  float* d_weights = scratch(tmp_b_, slots);
  DS4_CUDA_CHECK(
      cudaMemcpyAsync(d_sel, sel, sizeof(int32_t) * 2 * slots, cudaMemcpyHostToDevice, stream_));
  DS4_CUDA_CHECK(
      cudaMemcpyAsync(d_weights, weights, sizeof(float) * slots, cudaMemcpyHostToDevice, stream_));
  DS4_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the host arrays are reused
  const int32_t* d_rows = d_sel + slots;

  // Routed experts: gate and up per slot, SwiGLU times the weight, down per slot.
  float* gate = scratch(tmp_c_, slots * n_ff);
  float* up = scratch(tmp_d_, slots * n_ff);
  matmul_slots(l.gate_exps, n.data, t_rows, n_embd, d_sel, d_rows, slots, 1, gate);
  matmul_slots(l.up_exps, n.data, t_rows, n_embd, d_sel, d_rows, slots, 1, up);
  launch_swiglu(gate, up, d_weights, slots, n_ff, gate, stream_);
  float* down = scratch(tmp_e_, slots * n_embd);
  matmul_slots(l.down_exps, gate, slots, n_ff, d_sel, nullptr, slots, 1, down);

  // Shared expert, then f = moe + shared.
  float* sg = scratch(tmp_f_, 2 * t_rows * n_ff + t_rows * n_embd);
  float* su = sg + t_rows * n_ff;
  float* sh = su + t_rows * n_ff;
  matmul_slots(l.gate_shexp, n.data, t_rows, n_embd, nullptr, nullptr, t_rows, 1, sg);
  matmul_slots(l.up_shexp, n.data, t_rows, n_embd, nullptr, nullptr, t_rows, 1, su);
  launch_swiglu(sg, su, nullptr, t_rows, n_ff, sg, stream_);
  matmul_slots(l.down_shexp, sg, t_rows, n_ff, nullptr, nullptr, t_rows, 1, sh);
  launch_sum_slots(down, static_cast<int>(k), sh, t_rows, n_embd, out.data, stream_);
}

}  // namespace ds4::backend::cuda
