// src/dist/slice_worker.h: a worker process's side of distributed inference (features.md §10.4,
// §10.6): it registers its layer slice with the coordinator, keeps the registration alive, and
// serves the WORK that reaches its data endpoint, passing each item on to the next hop of the
// item's route or, at the route's end, answering the coordinator.
// Owns: the data socket (ZeroMQ PULL, loopback by default), the sockets to the next hops and to
// the coordinator, the control thread (HELLO, ACCEPT, BEATs both ways, RELEASE; a coordinator
// that stops answering or restarts is registered with again and every session dropped), one
// engine session per coordinator session with the token-prefix hash of what it holds, and the
// checks before evaluating: the item's hop is this slice, its hashes chain (wire.h), a
// continuing item starts where the session's timeline ends, a reset item starts at 0. A refused
// or malformed item changes no session; the worker goes on.
// Does not own: the engine, the route (each item carries its own).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "dist/curve.h"
#include "dist/wire.h"
#include "ds4/engine.h"

namespace ds4::dist {

struct SliceWorkerOptions {
  std::string coordinator;                   // "tcp://HOST:PORT" (required)
  std::string listen = "tcp://127.0.0.1:0";  // the data endpoint; port 0: the system picks one
  // The cluster key (curve.h): CURVE on every socket. Required to listen beyond loopback.
  std::shared_ptr<const ClusterKey> key;
  std::string build;  // the build id (build_id.h), sent in HELLO
  int n_ctx = 4096;
  int prefill_chunk = 2048;
  std::chrono::milliseconds beat_interval{500};
  std::chrono::milliseconds beat_timeout{5000};      // silence after which a peer is gone
  std::chrono::milliseconds forward_timeout{60000};  // the next hop takes an item
  WireLimits limits;
  std::function<void(const std::string&)> log;  // registration events (may be empty)
};

class SliceWorker {
 public:
  // Binds the data endpoint. Errors: the endpoint cannot be bound, no coordinator address, an
  // address beyond loopback without a key.
  static Result<std::unique_ptr<SliceWorker>> open(Engine& engine, SliceWorkerOptions options);
  ~SliceWorker();
  SliceWorker(const SliceWorker&) = delete;
  SliceWorker& operator=(const SliceWorker&) = delete;

  // The bound data address ("tcp://127.0.0.1:PORT").
  const std::string& endpoint() const { return endpoint_; }
  // Registers and serves until stop() (from any thread; returns within ~100 ms) or until the
  // coordinator refuses the registration (its ERROR text, naming the difference).
  Status serve();
  void stop() { stop_.store(true); }
  // The coordinator has accepted the current registration.
  bool registered() const { return registered_.load(); }

 private:
  struct Impl;
  SliceWorker(Engine& engine, SliceWorkerOptions options);
  void control_loop();
  void serve_item(std::span<const uint8_t> bytes, const ModelInfo& info);
  void serve_state(MessageType type, const StateMsg& q, const ModelInfo& info);
  Status fresh_session(uint64_t id, uint32_t n_ctx, uint32_t prefill_chunk);
  void refuse_item(uint64_t session, uint64_t request, const std::string& text);

  Engine& engine_;
  SliceWorkerOptions options_;
  std::unique_ptr<Impl> impl_;
  std::string endpoint_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> registered_{false};
};

}  // namespace ds4::dist
