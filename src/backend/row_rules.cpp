// src/backend/row_rules.cpp
#include "backend/row_rules.h"

#include <algorithm>

#include "base/check.h"

namespace ds4::backend {

void check_row_continues(int il, int state_ratio, int layer_ratio, int state_tokens, int n_ctx,
                         const RowTag& row) {
  DS4_CHECK_MSG(state_ratio == layer_ratio, "layer %d ratio mismatch", il);
  DS4_CHECK_MSG(row.pos == state_tokens, "layer %d: row at position %d, state at %d", il, row.pos,
                state_tokens);
  DS4_CHECK_MSG(row.pos < n_ctx, "position %d beyond the context %d", row.pos, n_ctx);
}

int raw_ring_push(int* head, int* n, int cap) {
  if (*n < cap) return (*head + (*n)++) % cap;
  const int slot = *head;
  *head = (*head + 1) % cap;
  return slot;
}

void select_top_k(const float* scores, int n, int k, std::vector<int32_t>* order,
                  std::vector<int32_t>* out) {
  DS4_CHECK(k > 0 && k < n);
  order->resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) (*order)[i] = i;
  std::nth_element(order->begin(), order->begin() + k, order->end(), [scores](int a, int b) {
    return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
  });
  out->assign(order->begin(), order->begin() + k);
  std::sort(out->begin(), out->end());
}

}  // namespace ds4::backend
