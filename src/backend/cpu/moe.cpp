// src/backend/cpu/moe.cpp: the FFN sublayer after its norm (model.md §4.10 steps 3-8): router,
// selection (hash table or biased top-k), routed experts with the SwiGLU clamp and the routing
// weight applied before the down projection, and the shared expert.
#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/math.h"
#include "backend/routing.h"
#include "base/check.h"
#include "quant/dot.h"

namespace ds4::backend::cpu {
namespace {

constexpr float kClamp = 10.0f;

// Rows of one task when `slots` slots of `rows` rows each are split over the pool: as
// quant::rows_per_task cuts all slots' rows, never across two slots.
int64_t rows_per_task(int64_t slots, int64_t rows, int threads) {
  return std::min(rows, quant::rows_per_task(slots * rows, threads));
}

float swiglu(float g, float u) {
  g = std::min(g, kClamp);
  u = std::clamp(u, -kClamp, kClamp);
  return silu(g) * u;
}

}  // namespace

// A counting sort of the slots by expert (scratch grown once, so decode does not allocate).
const int32_t* CpuBackend::slots_by_expert(const int32_t* sel, int64_t slots, int64_t n_exp) {
  if (static_cast<int64_t>(moe_order_.size()) < slots) moe_order_.resize(slots);
  moe_count_.assign(static_cast<size_t>(n_exp) + 1, 0);
  for (int64_t j = 0; j < slots; ++j) {
    DS4_CHECK_MSG(sel[j] >= 0 && sel[j] < n_exp, "slot %lld selects expert %d",
                  static_cast<long long>(j), sel[j]);
    ++moe_count_[sel[j] + 1];
  }
  for (int64_t e = 0; e < n_exp; ++e) moe_count_[e + 1] += moe_count_[e];
  for (int64_t j = 0; j < slots; ++j) moe_order_[moe_count_[sel[j]]++] = static_cast<int32_t>(j);
  return moe_order_.data();
}

void CpuBackend::do_moe(const MoeLayer& l, std::span<const RowTag> rows, Act n, Act out) {
  const int64_t t_rows = n.rows, n_embd = n.cols, n_exp = l.router.ne[1];
  const int64_t n_ff = l.gate_exps.ne[1], k = l.n_expert_used, slots = t_rows * k;
  // Scratch: router logits, weights, gate, up (-> mid), per-slot down outputs, shared expert.
  const int64_t need = t_rows * n_exp + slots + 2 * slots * n_ff + slots * n_embd +
                       2 * t_rows * n_ff + t_rows * n_embd;
  if (static_cast<int64_t>(moe_scratch_.size()) < need) moe_scratch_.resize(need);
  if (static_cast<int64_t>(moe_sel_.size()) < slots) moe_sel_.resize(slots);
  float* p = moe_scratch_.data();
  Act logits{p, t_rows, n_exp};
  float* weights = p + t_rows * n_exp;
  float* gate = weights + slots;
  float* up = gate + slots * n_ff;
  float* down = up + slots * n_ff;
  Act sh_gate{down + slots * n_embd, t_rows, n_ff};
  Act sh_up{sh_gate.data + t_rows * n_ff, t_rows, n_ff};
  Act sh_out{sh_up.data + t_rows * n_ff, t_rows, n_embd};
  int32_t* sel = moe_sel_.data();

  // Router (model.md §4.10 steps 3-5).
  do_matmul(l.router, n, logits, 1);
  const auto* bias = l.bias.present() ? static_cast<const float*>(l.bias.data) : nullptr;
  const auto* table = static_cast<const int32_t*>(l.tid2eid.data);
  for (int64_t t = 0; t < t_rows; ++t) {
    route_token(logits.row(t), static_cast<int>(n_exp), bias,
                table != nullptr ? table + int64_t{rows[t].token} * k : nullptr,
                static_cast<int>(k), l.weight_scale, sel + t * k, weights + t * k);
  }

  // Slots visited by expert (stable: slot order within an expert), so the tasks that read one
  // expert's weights run back to back, whichever rows -- and sequences -- selected it. Each output
  // element is still one dot call, so the order does not change any result.
  const int32_t* order = slots_by_expert(sel, slots, n_exp);

  // Routed gate/up (one activation encoding per token), SwiGLU, routing weight.
  enc_.encode(l.gate_exps.type, n.data, t_rows, n_embd, n_embd);
  const bool same_type = l.up_exps.type == l.gate_exps.type;
  if (!same_type) enc2_.encode(l.up_exps.type, n.data, t_rows, n_embd, n_embd);
  const EncodedRows& enc_up = same_type ? enc_ : enc2_;
  const int64_t gu_stride = row_bytes(l.gate_exps.type, n_embd);
  const int64_t up_stride = row_bytes(l.up_exps.type, n_embd);
  const int64_t ff_rows = rows_per_task(slots, n_ff, pool_.size());
  const int64_t ff_tasks = (n_ff + ff_rows - 1) / ff_rows;
  pool_.parallel_for(slots * ff_tasks, [&](int64_t task) {
    const int64_t j = order[task / ff_tasks], t = j / k;
    const int64_t e = sel[j];
    const auto* gw = static_cast<const uint8_t*>(l.gate_exps.data) + e * n_ff * gu_stride;
    const auto* uw = static_cast<const uint8_t*>(l.up_exps.data) + e * n_ff * up_stride;
    const int64_t o0 = (task % ff_tasks) * ff_rows, o1 = std::min(n_ff, o0 + ff_rows);
    float* g = gate + j * n_ff;
    float* u = up + j * n_ff;
    enc_.dot_rows(k_, gw + o0 * gu_stride, o1 - o0, t, 0, n_embd, g + o0);
    enc_up.dot_rows(k_, uw + o0 * up_stride, o1 - o0, t, 0, n_embd, u + o0);
    for (int64_t o = o0; o < o1; ++o) g[o] = swiglu(g[o], u[o]) * weights[j];
  });

  if (observer_ != nullptr) {
    observer_->on_expert_inputs({.layer = l.layer,
                                 .rows = t_rows,
                                 .k = static_cast<int>(k),
                                 .n_embd = n_embd,
                                 .n_ff = n_ff,
                                 .in = {n.data, static_cast<size_t>(t_rows * n_embd)},
                                 .experts = {sel, static_cast<size_t>(slots)},
                                 .weights = {weights, static_cast<size_t>(slots)},
                                 .down_in = {gate, static_cast<size_t>(slots * n_ff)}});
  }

  // Down projections per slot, then the slot-order sum.
  enc2_.encode(l.down_exps.type, gate, slots, n_ff, n_ff);
  const int64_t down_stride = row_bytes(l.down_exps.type, n_ff);
  const int64_t embd_rows = rows_per_task(slots, n_embd, pool_.size());
  const int64_t embd_tasks = (n_embd + embd_rows - 1) / embd_rows;
  pool_.parallel_for(slots * embd_tasks, [&](int64_t task) {
    const int64_t j = order[task / embd_tasks];
    const auto* dw = static_cast<const uint8_t*>(l.down_exps.data) + sel[j] * n_embd * down_stride;
    const int64_t o0 = (task % embd_tasks) * embd_rows;
    const int64_t o1 = std::min(n_embd, o0 + embd_rows);
    enc2_.dot_rows(k_, dw + o0 * down_stride, o1 - o0, j, 0, n_ff, down + j * n_embd + o0);
  });

  // Shared expert (model.md §4.10 step 7), then f = moe + shared.
  do_matmul(l.gate_shexp, n, sh_gate, 1);
  do_matmul(l.up_shexp, n, sh_up, 1);
  for (int64_t i = 0; i < t_rows * n_ff; ++i)
    sh_gate.data[i] = swiglu(sh_gate.data[i], sh_up.data[i]);
  do_matmul(l.down_shexp, sh_gate, sh_out, 1);
  for (int64_t t = 0; t < t_rows; ++t) {
    float* o = out.row(t);
    for (int64_t d = 0; d < n_embd; ++d) {
      float acc = 0.0f;
      for (int64_t i = 0; i < k; ++i) acc += down[(t * k + i) * n_embd + d];
      o[d] = acc + sh_out.row(t)[d];
    }
  }
}

}  // namespace ds4::backend::cpu
