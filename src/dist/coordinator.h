// src/dist/coordinator.h: the coordinator's side of distributed inference (features.md §10.4-10.8):
// workers register on its control endpoint; it builds the route of slices after its own and is the
// engine's LayerTail over that route: each span goes to the route's first worker, is passed on
// from worker to worker, and the last one answers here.
// Owns: the control socket (ZeroMQ ROUTER, loopback by default) and its thread (registrations
// checked against this process's model and build, refusals naming the difference; BEATs; workers
// silent past the beat timeout dropped; a new registration of the same layers at the same host
// replacing the old one), the route, the sockets to first hops, each engine session's timeline as
// sent (the route it was built on, position, prefix hash, spans in flight) and the answers as
// they come. A worker lost mid-request fails that request at once; a session whose route changed
// is replayed by the engine (holds() is false); a span that starts a timeline waits for a full
// route up to route_timeout, then fails naming what is missing. Never a hang: every wait has a
// deadline.
// Does not own: the engine, the workers, the transcript (the engine's session replays it).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "dist/curve.h"
#include "dist/wire.h"
#include "ds4/engine.h"

namespace ds4::dist {

struct CoordinatorOptions {
  std::string listen = "tcp://127.0.0.1:0";  // the control endpoint workers connect to
  // The cluster key (curve.h): CURVE on every socket. Required to listen beyond loopback.
  std::shared_ptr<const ClusterKey> key;
  HiddenBits bits = HiddenBits::kF32;  // hidden states on the wire
  int window = 0;  // prefill spans in flight; 0: the route's hops + 2, within [2, 8]
  std::chrono::milliseconds beat_interval{500};
  std::chrono::milliseconds beat_timeout{5000};    // a worker silent this long is gone
  std::chrono::milliseconds work_timeout{120000};  // no answer to a span
  std::chrono::milliseconds route_timeout{60000};  // a new timeline waits this long for a route
  WireLimits limits;
  std::function<void(const std::string&)> log;  // registrations and losses (may be empty)
};

class Coordinator : public LayerTail {
 public:
  // Binds the control endpoint (workers may connect at once; they are answered after start()).
  // Errors: the endpoint cannot be bound, an address beyond loopback without a key.
  static Result<std::shared_ptr<Coordinator>> open(CoordinatorOptions options);
  // Starts taking registrations for `self`: this process's model, build, layers and context
  // (route.h hello_of() of the engine whose tail this is). Once. Errors: a `self` that does not
  // start at layer 0 or that ends with the head.
  Status start(const Hello& self);
  ~Coordinator() override;
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // The bound control address ("tcp://127.0.0.1:PORT").
  const std::string& endpoint() const;
  // Ok when the registered workers make a full route now; else why not ("distributed route
  // incomplete: missing layer K").
  Status route_ready() const;
  // The current route, one "A:B@endpoint" (or "A:output@...") per hop; "" without one.
  std::string describe_route() const;
  // Waits until route_ready() or `timeout`; `waiting` hears the reason about every second.
  Status wait_for_route(std::chrono::milliseconds timeout,
                        const std::function<void(const Status&)>& waiting = {}) const;

  // LayerTail.
  void attach(uint64_t session, const SessionOptions& options) override;
  Status send(uint64_t session, std::span<const TokenId> tokens, std::span<const float> hidden,
              bool reset, bool want_logits) override;
  Result<std::vector<float>> receive(uint64_t session) override;
  int window() const override;
  bool holds(uint64_t session, size_t n_tokens) const override;
  void release(uint64_t session) override;
  Result<std::vector<std::vector<uint8_t>>> export_layers(uint64_t session,
                                                          size_t n_tokens) override;
  Status import_layers(
      uint64_t session, std::span<const TokenId> tokens,
      const std::function<std::vector<uint8_t>(int first, int last)>& shard_of) override;

 private:
  struct Impl;
  explicit Coordinator(CoordinatorOptions options);
  void control_loop();
  // Puts `bytes` on the data endpoint `to` (a PUSH socket per endpoint); false after the beat
  // timeout.
  bool push(const std::string& to, const std::vector<uint8_t>& bytes);
  // With the lock of `lock` held: waits for the answer to `request` (a RESULT, STATE or ERROR)
  // until `deadline`, failing early when a worker of `route` is lost.
  Result<Message> await(std::unique_lock<std::mutex>& lock, uint64_t request,
                        const std::vector<uint64_t>& incarnations, const std::vector<Hop>& route);
  // With `lock` held: one message per hop of `route` (made by `make` for the hop and its request
  // id, sent with the lock let go), then every answer awaited, in hop order. On a failure the
  // other answers are forgotten.
  Result<std::vector<Message>> exchange(
      std::unique_lock<std::mutex>& lock, const std::vector<Hop>& route,
      const std::vector<uint64_t>& incarnations,
      const std::function<std::vector<uint8_t>(const Hop&, uint64_t request)>& make);

  std::unique_ptr<Impl> impl_;
};

}  // namespace ds4::dist
