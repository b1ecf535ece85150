// src/engine/session_impl.h: a session's live state on the host side.
#pragma once

#include <vector>

#include "ds4/session.h"
#include "engine/engine_impl.h"
#include "engine/next_logits.h"
#include "kv/snapshot.h"

namespace ds4 {

struct Session::Impl {
  Engine::Impl* engine = nullptr;
  int seq = 0;
  SessionOptions options;
  Steering steering;  // the scales of the next passes (Session::set_steering)
  std::vector<TokenId> tokens;
  NextLogits logits{nullptr};  // bound to the engine's backend at creation
  uint64_t tail_session = 0;   // this session's timeline id in the engine's LayerTail
  bool tail_fresh = true;      // the tail's timeline starts again at the next span
  // The MTP block's state (model.md §8.1), with an MTP file: its row of position p pairs the hidden
  // state of p with token p + 1, so the last position waits for its next token (pending).
  struct Mtp {
    int seq = -1;  // the block's raw window (a backend sequence of one layer); -1: no MTP file
    std::unique_ptr<backend::Buffer> pending;  // RMSNorm(hidden, hnorm) of the last position
    bool has_pending = false;
    // The window holds every position from `fresh_from` to the one before the pending one; false
    // (a snapshot was loaded): the next pass of the main model starts it again at its first
    // position. The block attends to its last n_swa rows only, and a row's stored kv depends on
    // that position alone, so n_swa - 1 positions after a restart its drafts are exact again.
    bool live = false;
    int fresh_from = 0;
  } mtp;

  // The row of token `token` at position `pos`, with the session's steering scales.
  backend::RowTag tag(int32_t pos, TokenId token) const;
  Status check_tokens(std::span<const TokenId> t, size_t keep) const;
  Result<EvalStats> append(std::span<const TokenId> t, std::vector<float>* all_logits);
  // Session::append_slice.
  Result<std::vector<float>> append_slice(std::span<const TokenId> t,
                                          std::span<const float> hidden_in);
  // append() through the local slice (append_slice, a prefill chunk at a time) and the engine's
  // LayerTail.
  Result<EvalStats> append_through_tail(std::span<const TokenId> t);
  // ok when the engine computes the whole model (append, sync, eval, step); else why not.
  Status whole_model() const;
  // Session::save of a tail engine: the tail's layers into `snap`.
  Status gather_tail_layers(kv::Snapshot* snap) const;
  void reset();
  // After a pass that evaluated `run` from position pos0 on the marked sequence, `all` the logits
  // after each of its rows: keeps run[0] and each later token while `accept` keeps it, takes the
  // rest back, and appends the kept tokens with the logits after the last. Returns how many it
  // kept; a failed rewind resets the session and returns the error (Session::verify, Engine::step).
  Result<int> keep_verified(std::span<const TokenId> run, int32_t pos0,
                            const Session::DraftAccept& accept, std::span<const float> all);
  // The MTP rows that a pass of the main model over c more positions completes (0 without MTP).
  int mtp_rows(int c) const;
  // After a pass of the main model over positions [c0, c0 + c) (the tokens appended already),
  // whose hidden states are the pass's rows [r0, r0 + c): writes the block's input rows this
  // completes at the next mtp_rows(c) rows of `in` (from row tags->size()), their tags to `tags`,
  // and keeps the last position's as the pending one. The caller then runs them (Forward::run_mtp).
  void mtp_collect(int c0, int c, int r0, backend::Act in, std::vector<backend::RowTag>* tags);
  // mtp_collect and the run, for a pass of this session alone (the hidden states from row 0).
  void mtp_advance(int c0, int c);
  // Session::can_draft.
  bool mtp_ready() const;
  Result<std::vector<TokenId>> mtp_draft(TokenId next, int n, float margin);
};

}  // namespace ds4
