// src/backend/cpu/row_undo.cpp: recording and undoing one row's changes to a layer's state.
#include "backend/cpu/row_undo.h"

#include <algorithm>

#include "backend/cpu/cpu_backend.h"

namespace ds4::backend::cpu {
namespace {

// The frontier rows a compressor step at `pos` may write: ratio 4 shifts its current window into
// the previous one when it emits, so all 8 rows; a larger ratio writes row pos % ratio only.
void frontier_span(int ratio, int pos, int rows, int* first, int* count) {
  if (ratio == 4) {
    *first = 0;
    *count = rows;
  } else {
    *first = pos % ratio;
    *count = 1;
  }
}

void save_rows(const std::vector<float>& from, int first, int count, int width,
               std::vector<float>* to) {
  const auto b = from.begin() + static_cast<ptrdiff_t>(first) * width;
  to->assign(b, b + static_cast<ptrdiff_t>(count) * width);
}

void restore_rows(const std::vector<float>& saved, int first, int width, std::vector<float>* to) {
  std::copy(saved.begin(), saved.end(), to->begin() + static_cast<ptrdiff_t>(first) * width);
}

}  // namespace

RowUndo record_row(const LayerCache& c, int pos, int head_dim) {
  RowUndo u{.raw_head = c.raw_head,
            .n_raw = c.n_raw,
            .n_comp = c.n_comp,
            .n_index = c.n_index,
            .n_tokens = c.n_tokens};
  if (c.n_raw == c.lay.raw_cap) {  // the push overwrites the oldest row
    u.raw_slot = c.raw_head;
    save_rows(c.raw, c.raw_head, 1, head_dim, &u.raw_old);
  }
  if (c.lay.ratio != 0) {
    int count = 0;
    frontier_span(c.lay.ratio, pos, c.lay.frontier_rows, &u.comp_first, &count);
    save_rows(c.comp_kv, u.comp_first, count, c.lay.frontier_width, &u.comp_kv);
    save_rows(c.comp_score, u.comp_first, count, c.lay.frontier_width, &u.comp_score);
  }
  if (c.lay.ratio == 4) {
    u.index_kv = c.index_kv;
    u.index_score = c.index_score;
  }
  return u;
}

void undo_row(LayerCache& c, const RowUndo& u, int head_dim) {
  if (u.raw_slot >= 0) restore_rows(u.raw_old, u.raw_slot, head_dim, &c.raw);
  if (c.lay.ratio != 0) {
    restore_rows(u.comp_kv, u.comp_first, c.lay.frontier_width, &c.comp_kv);
    restore_rows(u.comp_score, u.comp_first, c.lay.frontier_width, &c.comp_score);
  }
  if (c.lay.ratio == 4) {
    c.index_kv = u.index_kv;
    c.index_score = u.index_score;
  }
  c.raw_head = u.raw_head;
  c.n_raw = u.n_raw;
  c.n_comp = u.n_comp;
  c.n_index = u.n_index;
  c.n_tokens = u.n_tokens;
}

}  // namespace ds4::backend::cpu
