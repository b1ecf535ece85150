// src/dist/remote_slice.h: the coordinator's handle on one worker's slice: it sends a span's
// tokens and hidden state as WORK and waits for the RESULT (features.md §10.6).
// Owns: one ZeroMQ REQ socket to the worker, the request ids, the position and token-prefix hash
// of the session's timeline as this coordinator has sent it, and the checks on each answer (its
// request id, its hash, its kind and size). A lost or silent worker fails the call after the
// timeout with a clear error, never a hang; the socket is then made afresh.
// Does not own: the transcript or its replay after a failure (the caller resets and sends it
// again), routes.
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dist/wire.h"
#include "ds4/status.h"

namespace ds4::dist {

struct RemoteSliceOptions {
  std::string endpoint;  // the worker's "tcp://HOST:PORT"
  uint32_t layer_first = 0;
  uint32_t layer_last = 0;
  bool output = false;        // the slice ends with the head: answers are logits
  uint32_t hidden_width = 0;  // floats per token of the hidden state
  uint32_t n_vocab = 0;
  HiddenBits bits = HiddenBits::kF32;
  uint64_t session = 1;  // the coordinator's session id
  std::chrono::milliseconds timeout{60000};
  WireLimits limits;
};

class RemoteSlice {
 public:
  explicit RemoteSlice(RemoteSliceOptions options);
  ~RemoteSlice();
  RemoteSlice(const RemoteSlice&) = delete;
  RemoteSlice& operator=(const RemoteSlice&) = delete;

  // Sends `tokens` (with the previous slice's hidden state, tokens x hidden_width) as the next
  // span of the session, or as its start when `reset`; returns the worker's hidden state or, for
  // the slice with the head, the logits after the last token. Errors: the worker's ERROR text, an
  // answer that does not match, no answer within the timeout. After an error the timeline is
  // unknown: the next call must reset.
  Result<std::vector<float>> append(std::span<const int32_t> tokens, std::span<const float> hidden,
                                    bool reset);
  uint32_t n_tokens() const { return pos_; }

 private:
  struct Impl;
  void reconnect();

  RemoteSliceOptions o_;
  std::unique_ptr<Impl> impl_;
  uint64_t next_request_ = 1;
  uint32_t pos_ = 0;
  uint64_t hash_ = kPrefixHashBasis;
  bool broken_ = false;
};

}  // namespace ds4::dist
