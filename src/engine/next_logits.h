// src/engine/next_logits.h: a session's next-token logits, kept where the pass that computed them
// left them (issue 55's device picks). On a backend that picks tokens (Backend::picks_tokens) a
// pass's row is copied into the session's own row of backend memory, and the host copy is made
// only when something reads it (a save, log-probabilities, a host draw); Engine::pick reads the
// backend row and brings back only the token. Elsewhere the row is downloaded at once, as before.
// Owns: the session's backend row and its host copy.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"

namespace ds4 {

class NextLogits {
 public:
  explicit NextLogits(backend::Backend* backend) : backend_(backend) {}

  bool empty() const { return where_ == Where::kNone; }
  void clear() { where_ = Where::kNone; }
  // The logits are row `row` ([1][n_vocab]) of a pass's output in backend memory. Returns once
  // the backend's queued work is done, or with wait = false at once: the caller then waits for
  // the backend before anything reads them (Engine::step, one wait for all its sessions' rows).
  void take(backend::Act row, bool wait = true);
  // The logits are these host floats (a loaded snapshot, a verification's kept row).
  void assign(std::span<const float> host);
  void assign(std::vector<float>&& host);
  // The host copy, downloaded at the first read after take() (empty when there are none).
  std::span<const float> host() const;
  // The backend row holding them, where the backend picks tokens and they are there (else null).
  const backend::Act* device() const {
    return where_ == Where::kDevice || where_ == Where::kBoth ? &act_ : nullptr;
  }

 private:
  enum class Where { kNone, kDevice, kHost, kBoth };
  backend::Backend* backend_;
  std::unique_ptr<backend::Buffer> row_;  // n_vocab floats of backend memory, at the first take
  backend::Act act_{};
  mutable std::vector<float> host_;
  mutable Where where_ = Where::kNone;
};

}  // namespace ds4
