// src/backend/row_rules.h: host-side rules of the per-row attention walk that every backend
// follows (model.md §4.5, 4.8): a row must continue its layer's state; the raw window is a ring
// whose oldest row leaves first; the indexer keeps the k best compressed rows, lowest index first
// on ties, visited in ascending order.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace ds4::backend {

// Aborts (a caller bug) unless `row` is the next position of a layer in the state described.
void check_row_continues(int il, int state_ratio, int layer_ratio, int state_tokens, int n_ctx,
                         const RowTag& row);

// Slot of the ring (capacity cap) the new row goes to; when full, the oldest row is dropped.
int raw_ring_push(int* head, int* n, int cap);

// The k best of scores[0..n) (k < n), ties to the lower index, in ascending index order.
// `order` is scratch.
void select_top_k(const float* scores, int n, int k, std::vector<int32_t>* order,
                  std::vector<int32_t>* out);

}  // namespace ds4::backend
