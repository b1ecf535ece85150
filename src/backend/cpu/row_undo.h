// src/backend/cpu/row_undo.h: what one appended row changed in a layer's state, kept while a
// sequence is marked (Backend::mark_sequence: speculative decoding verifies drafted tokens as one
// batch, then keeps only the accepted ones), so that the rejected rows can be taken back exactly.
// Owns: the record of a row (the counters before it, the raw-window row it overwrote when the ring
// was full, the compressor frontiers it rewrote) and its undoing. Rows beyond the restored counts
// of the compressed and indexer rows need nothing: they are unreachable until written again.
// Does not own: the layer state (LayerCache), when a sequence is marked.
#pragma once

#include <vector>

namespace ds4::backend::cpu {

struct LayerCache;

struct RowUndo {
  int raw_head = 0, n_raw = 0, n_comp = 0, n_index = 0, n_tokens = 0;
  int raw_slot = -1;           // the ring slot the row overwrote, when the ring was full
  std::vector<float> raw_old;  // that slot's row
  int comp_first = 0;          // first frontier row saved (ratio 4: all 8; ratio 128: one)
  std::vector<float> comp_kv, comp_score;
  std::vector<float> index_kv, index_score;  // ratio 4: the whole indexer frontier
};

// Records what the next row appended at `pos` will change in `c` (before it is appended).
RowUndo record_row(const LayerCache& c, int pos, int head_dim);
// Puts back what `u` recorded: `c` is then as it was before that row.
void undo_row(LayerCache& c, const RowUndo& u, int head_dim);

}  // namespace ds4::backend::cpu
