// src/backend/cuda/moe.cpp: the FFN op on the device. Routing runs on the device
// (kernels/routing.cuh, the twin of backend/routing.h), so the op never waits for the host;
// gate/up/down run as slot matmuls over the selected experts; the routing weight multiplies the
// SwiGLU output before the down projection.
#include "backend/cuda/check.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/dense.cuh"
#include "backend/cuda/kernels/matmul_planar.cuh"
#include "backend/cuda/kernels/matmul_q.cuh"
#include "backend/cuda/kernels/routing.cuh"

namespace ds4::backend::cuda {

void CudaBackend::do_moe(const MoeLayer& l, std::span<const RowTag> rows, Act n, Act out) {
  const int64_t t_rows = n.rows, n_embd = n.cols, n_exp = l.router.ne[1];
  const int64_t n_ff = l.gate_exps.ne[1], k = l.n_expert_used, slots = t_rows * k;
  // The shared expert reads only n, as the routed experts do: on a lane of its own, its products
  // fill what the routed chain leaves of the GPU (the routing kernel is one CTA, the routed
  // rows kernels a few per expert), issued first so that they meet the router's product and
  // the routing. On the H200 this decoded Flash q2 faster than the shared expert after the
  // routed experts on the main stream, with the same tokens. Not for float weights: their
  // products may go to cuBLAS, whose one handle would then run on two streams at once.
  const bool lane =
      !float_weight(l.gate_shexp) && !float_weight(l.up_shexp) && !float_weight(l.down_shexp);
  float* sg = scratch(tmp_f_, 2 * t_rows * n_ff + t_rows * n_embd);
  float* su = sg + t_rows * n_ff;
  float* sh = su + t_rows * n_ff;
  const auto shared_expert = [&] {
    matmul_gate_up(l.gate_shexp, l.up_shexp, n.data, t_rows, n_embd, nullptr, nullptr, t_rows, sg,
                   su);
    const void* enc_sh = encode_swiglu_for(l.down_shexp, sg, su, nullptr, t_rows, n_ff);
    matmul_encoded(l.down_shexp, enc_sh, n_ff, nullptr, nullptr, t_rows, 1, sh);
  };
  if (lane) {
    fork_to(ffn_lane_);
    const OnLane on(*this, ffn_lane_);
    shared_expert();
  }

  float* logits = scratch(tmp_a_, t_rows * n_exp);
  matmul_slots(l.router, n.data, t_rows, n_embd, nullptr, nullptr, t_rows, 1, logits);
  grow(ints_, sizeof(int32_t) * 2 * slots);
  auto* d_sel = static_cast<int32_t*>(ints_.get());
  int32_t* d_rows = d_sel + slots;
  float* d_weights = scratch(tmp_b_, slots);
  const int32_t* tokens = l.tid2eid.present() ? device_tokens(rows) : nullptr;
  launch_route(logits, t_rows, static_cast<int>(n_exp),
               l.bias.present() ? static_cast<const float*>(l.bias.data) : nullptr,
               l.tid2eid.present() ? static_cast<const int32_t*>(l.tid2eid.data) : nullptr, tokens,
               static_cast<int>(k), l.weight_scale, d_sel, d_weights, d_rows, stream_);

  // With at least a slot per expert on average (prefill), visit the slots by expert: each
  // expert's weights are read once for a group of its slots. With fewer (a decode step of a few
  // sessions) most experts have one slot, and the one-slot rows kernel reads them faster than a
  // group tile (measured on the H200 with 16 sessions). The results are the same either way.
  SlotGroups groups;
  const SlotGroups* by_expert = nullptr;
  const int n_mat = static_cast<int>(l.gate_exps.ne[2]);
  if (t_rows > 1 && slots >= n_mat) {
    grow(groups_, static_cast<size_t>(slot_groups_bytes(slots, n_mat)));
    groups = launch_group_slots(d_sel, slots, n_mat, groups_.get(), stream_);
    by_expert = &groups;
  }

  // Routed experts: gate and up per slot, SwiGLU times the weight, down per slot.
  float* gate = scratch(tmp_c_, slots * n_ff);
  float* up = scratch(tmp_d_, slots * n_ff);
  matmul_gate_up(l.gate_exps, l.up_exps, n.data, t_rows, n_embd, d_sel, d_rows, slots, gate, up,
                 by_expert);
  if (observer_ != nullptr) report_expert_inputs(l, n, d_sel, d_weights, gate, up, slots, n_ff);
  const void* enc_down = encode_swiglu_for(l.down_exps, gate, up, d_weights, slots, n_ff);
  float* down = scratch(tmp_e_, slots * n_embd);
  matmul_encoded(l.down_exps, enc_down, n_ff, d_sel, nullptr, slots, 1, down, by_expert);

  // f = moe + shared.
  if (lane) {
    join_from(ffn_lane_);
  } else {
    shared_expert();
  }
  launch_sum_slots(down, static_cast<int>(k), sh, t_rows, n_embd, out.data, stream_);
}

// The CPU backend's report (moe.cpp there): the rows' input, their experts (slot j is row j / k's
// (j % k)-th), the routing weights and each slot's down input, SwiGLU(gate, up) x its weight.
void CudaBackend::report_expert_inputs(const MoeLayer& l, Act n, const int32_t* d_sel,
                                       const float* d_weights, const float* gate, const float* up,
                                       int64_t slots, int64_t n_ff) {
  float* down_in = scratch(tmp_obs_, slots * n_ff);
  launch_swiglu(gate, up, d_weights, slots, n_ff, down_in, stream_);
  std::vector<float> in(static_cast<size_t>(n.rows * n.cols)), weights(static_cast<size_t>(slots)),
      din(static_cast<size_t>(slots * n_ff));
  std::vector<int32_t> experts(static_cast<size_t>(slots));
  DS4_CUDA_CHECK(cudaMemcpyAsync(in.data(), n.data, in.size() * sizeof(float),
                                 cudaMemcpyDeviceToHost, stream_));
  DS4_CUDA_CHECK(cudaMemcpyAsync(experts.data(), d_sel, experts.size() * sizeof(int32_t),
                                 cudaMemcpyDeviceToHost, stream_));
  DS4_CUDA_CHECK(cudaMemcpyAsync(weights.data(), d_weights, weights.size() * sizeof(float),
                                 cudaMemcpyDeviceToHost, stream_));
  DS4_CUDA_CHECK(cudaMemcpyAsync(din.data(), down_in, din.size() * sizeof(float),
                                 cudaMemcpyDeviceToHost, stream_));
  DS4_CUDA_CHECK(cudaStreamSynchronize(stream_));
  observer_->on_expert_inputs({.layer = l.layer,
                               .rows = n.rows,
                               .k = l.n_expert_used,
                               .n_embd = n.cols,
                               .n_ff = n_ff,
                               .in = in,
                               .experts = experts,
                               .weights = weights,
                               .down_in = din});
}

const void* CudaBackend::encode_swiglu_for(const Weight& down, float* gate, const float* up,
                                           const float* weights, int64_t rows, int64_t cols) {
  if (float_weight(down)) {
    launch_swiglu(gate, up, weights, rows, cols, gate, stream_);
    return encode_for(down, gate, rows, cols);
  }
  grow(enc_, static_cast<size_t>(encoded_row_bytes(down.type, cols) * rows));
  launch_encode_swiglu_rows(down.type, gate, up, weights, rows, cols, enc_.get(), stream_);
  return enc_.get();
}

// Gate and up read the same activations: one encoding serves both when their types match (as
// on the CPU).
void CudaBackend::matmul_gate_up(const Weight& gate, const Weight& up, const float* x,
                                 int64_t x_rows, int64_t x_cols, const int32_t* experts,
                                 const int32_t* rows, int64_t n_slots, float* y_gate, float* y_up,
                                 const SlotGroups* by_expert) {
  const void* enc_gate = encode_for(gate, x, x_rows, x_cols);
  // Both in one launch where the rows kernel runs them (one slot, or expert slots without
  // groups).
  if (up.type == gate.type && up.layout == gate.layout && by_expert == nullptr) {
    const Weight* ws[] = {&gate, &up};
    float* ys[] = {y_gate, y_up};
    if (launch_matmul_parts(ws, ys, enc_gate, encoded_row_bytes(gate.type, x_cols), experts, rows,
                            n_slots, gate.ne[1], stream_))
      return;
  }
  matmul_encoded(gate, enc_gate, x_cols, experts, rows, n_slots, 1, y_gate, by_expert);
  const void* enc_up = up.type == gate.type ? enc_gate : encode_for(up, x, x_rows, x_cols);
  matmul_encoded(up, enc_up, x_cols, experts, rows, n_slots, 1, y_up, by_expert);
}

}  // namespace ds4::backend::cuda
