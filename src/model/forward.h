// src/model/forward.h: the layer schedule of DeepSeek V4, written once against backend::Backend
// (model.md §4.12, Appendix A; design/architecture.md §5.4).
// Owns: the activation buffers of one batch capacity and the order of ops for a batch of token
// rows (each tagged with its sequence and absolute position).
// Does not own: weights (ModelWeights), sequence state (the backend), sessions (engine/).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "model/shape.h"
#include "model/weights.h"

namespace ds4::model {

class Forward {
 public:
  Forward(const Shape& shape, const ModelWeights& weights, backend::Backend& backend);
  ~Forward();

  int max_rows() const { return max_rows_; }
  // Allocates buffers for batches of up to `max_rows` rows (once; grows only).
  void reserve(int max_rows);
  // Runs every row through the network, updating each row's sequence state, and writes the logits
  // of the rows listed in `logit_rows` (indices into `rows`) into `logits` [logit_rows][n_vocab].
  // Rows of one sequence must be consecutive positions continuing its state.
  void run(std::span<const backend::RowTag> rows, std::span<const int> logit_rows,
           backend::Act logits);
  // The same through `range` only: the rows' hidden state comes from `hidden_in` (rows x n_hc *
  // n_embd floats) unless the range starts at layer 0, and goes to `hidden_out` (the same size)
  // unless the range ends with the head, which writes `logits` as run() does. The layers
  // computed, in order, are exactly run()'s, so chained slices give run()'s results.
  void run_range(std::span<const backend::RowTag> rows, const LayerRange& range,
                 const float* hidden_in, std::span<const int> logit_rows, backend::Act logits,
                 float* hidden_out);

  // ---- the MTP draft block (model.md §8.1) ----
  // The hidden state the last run() or run_mtp() left for its rows (rows x n_hc * n_embd; row r
  // of the batch at row r), until the next run.
  backend::Act hidden(int first_row, int rows) const;
  // hn = RMSNorm(h, hnorm) over each of h's n_hc streams: the MTP block's view of a hidden state.
  void mtp_normalise(const MtpWeights& m, backend::Act h, backend::Act hn);
  // One pass of the MTP block over `rows` of an MTP sequence (its one layer of state): row r pairs
  // the normalised hidden state hn[r] with the embedding of its tag's token, X0 = e_proj .
  // RMSNorm(embed, enorm) + h_proj . hn in each stream, then one dense decoder layer and the MTP
  // head (the main output.weight) for `logit_rows`. The layer's output state is hidden() after.
  void run_mtp(const MtpWeights& m, std::span<const backend::RowTag> rows, backend::Act hn,
               std::span<const int> logit_rows, backend::Act logits);

 private:
  struct Buffers;
  // One sublayer with weights L over layer `state_layer` of the rows' sequences; `layer` is the
  // model's layer it computes (steering and observers), -1 for the MTP block.
  void attention_sublayer(const LayerWeights& L, int state_layer, int layer,
                          std::span<const backend::RowTag> rows, int n);
  void ffn_sublayer(const LayerWeights& L, int layer, std::span<const backend::RowTag> rows, int n);
  // After a sublayer's output y of `layer` (>= 0): its steering and the observer's report.
  void finish_sublayer(int layer, Sublayer which, std::span<const backend::RowTag> rows,
                       backend::Act y);

  const Shape shape_;
  const ModelWeights& w_;
  backend::Backend& b_;
  int max_rows_ = 0;
  std::vector<std::unique_ptr<backend::Buffer>> storage_;
  std::unique_ptr<Buffers> buf_;
};

// Per-sequence state layout of a shape at a context size (model.md §5.1-5.2).
backend::SequenceLayout sequence_layout(const Shape& shape, int n_ctx);
// The MTP block's state: one dense layer's raw window (model.md §8.1).
backend::SequenceLayout mtp_sequence_layout(const Shape& shape, int n_ctx);

}  // namespace ds4::model
