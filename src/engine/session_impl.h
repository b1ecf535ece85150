// src/engine/session_impl.h: a session's live state on the host side.
#pragma once

#include <vector>

#include "ds4/session.h"
#include "engine/engine_impl.h"
#include "kv/snapshot.h"

namespace ds4 {

struct Session::Impl {
  Engine::Impl* engine = nullptr;
  int seq = 0;
  SessionOptions options;
  std::vector<TokenId> tokens;
  std::vector<float> logits;
  uint64_t tail_session = 0;  // this session's timeline id in the engine's LayerTail
  bool tail_fresh = true;     // the tail's timeline starts again at the next span
  // The MTP block's state (model.md §8.1), with an MTP file: its row of position p pairs the hidden
  // state of p with token p + 1, so the last position waits for its next token (pending).
  struct Mtp {
    int seq = -1;  // the block's raw window (a backend sequence of one layer); -1: no MTP file
    std::unique_ptr<backend::Buffer> pending;  // RMSNorm(hidden, hnorm) of the last position
    bool has_pending = false;
    bool live = false;  // the window holds every position before the pending one
  } mtp;

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
  // After a pass of the main model over positions [c0, c0 + c) (Forward::hidden rows 0..c-1):
  // runs the MTP rows this completes and keeps the last position's as the pending one.
  void mtp_advance(int c0, int c);
  // Session::can_draft.
  bool mtp_ready() const { return mtp.live && mtp.has_pending && !logits.empty(); }
  Result<std::vector<TokenId>> mtp_draft(int n);
};

}  // namespace ds4
