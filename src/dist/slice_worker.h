// src/dist/slice_worker.h: a worker's data plane (features.md §10.6): WORK for the layer slice
// its engine holds, served on one ZeroMQ REP socket, one item at a time.
// Owns: the socket, one engine session per coordinator session id with the token-prefix hash of
// what it holds, and the checks before evaluating: the item's layer range is this slice's, its
// hashes chain (wire.h), a continuing item starts where the session's timeline ends (same
// prefix hash, pos0 at its length), a reset item starts at 0. Answers RESULT (an ACK, the hidden
// state, or the logits) or ERROR; a malformed or refused item changes no session and the worker
// goes on. Does not own: registration, routes, forwarding to the next worker (the coordinator
// chains the slices for now), the engine.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "dist/wire.h"
#include "ds4/engine.h"

namespace ds4::dist {

struct SliceWorkerOptions {
  std::string endpoint = "tcp://127.0.0.1:0";  // loopback; port 0: the system picks one
  int n_ctx = 4096;
  int prefill_chunk = 2048;
  WireLimits limits;
};

class SliceWorker {
 public:
  // Binds the socket. Errors: the endpoint cannot be bound.
  static Result<std::unique_ptr<SliceWorker>> open(Engine& engine, SliceWorkerOptions options);
  ~SliceWorker();
  SliceWorker(const SliceWorker&) = delete;
  SliceWorker& operator=(const SliceWorker&) = delete;

  // The bound address ("tcp://127.0.0.1:PORT").
  const std::string& endpoint() const { return endpoint_; }
  // Serves items until stop() is called (from any thread); returns within ~100 ms of it.
  Status serve();
  void stop() { stop_.store(true); }

 private:
  struct Impl;
  SliceWorker(Engine& engine, SliceWorkerOptions options);
  std::vector<uint8_t> answer(std::span<const uint8_t> request);

  Engine& engine_;
  SliceWorkerOptions options_;
  std::unique_ptr<Impl> impl_;
  std::string endpoint_;
  std::atomic<bool> stop_{false};
  struct Timeline {
    std::unique_ptr<Session> session;
    uint64_t hash = kPrefixHashBasis;
  };
  std::map<uint64_t, Timeline> sessions_;
};

}  // namespace ds4::dist
