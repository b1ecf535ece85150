// src/dist/route.h: who computes which layers (features.md §10.4): whether a worker may join the
// coordinator's model, and the chain of workers that covers the layers after the coordinator's.
// Owns: the registration checks (the same build and model file, a shape that agrees, a context at
// least the coordinator's, a layer range inside the model) and the route search (contiguous
// ranges from the coordinator's end to the last layer, ending with the output head unless the
// coordinator computes it). Does not own: connections, registration bookkeeping, replay.
#pragma once

#include <span>
#include <vector>

#include "dist/wire.h"
#include "ds4/engine.h"
#include "ds4/status.h"

namespace ds4::dist {

// A process's registration record for its engine's slice (no data endpoint or incarnation yet).
Hello hello_of(const ModelInfo& info, std::string_view build, int ctx);
// A random non-zero id for this process's registration (a restart draws another).
uint64_t draw_incarnation();

// Whether a "tcp://HOST:PORT" (or "HOST:PORT") endpoint's host is a loopback address: localhost,
// 127.0.0.0/8, ::1 (bracketed or not). Anything else, a host name or "*" among them, is not.
bool is_loopback_endpoint(const std::string& tcp_endpoint);
// Ok when a process may listen on `endpoint`: loopback, or anywhere with a cluster key (`keyed`).
Status check_listen(const std::string& endpoint, bool keyed);

// Why `worker` cannot serve `coordinator`'s model, naming each difference; ok when it can.
Status check_registration(const Hello& coordinator, const Hello& worker);

// A registered worker, by the index the caller keeps it under.
struct Candidate {
  int index = 0;
  uint32_t first = 0;  // inclusive layer range
  uint32_t last = 0;
  bool output = false;
};

// The workers, in hop order, that cover layers coordinator_last + 1 .. n_layer - 1, each range
// starting right after the previous one; the last must own the output head unless
// `coordinator_head` (the coordinator computes the logits from the final hidden state). Ties
// prefer a worker with the head, then the longest range. Empty when the coordinator covers every
// layer. Error: "distributed route incomplete: missing layer K" (the first layer no chain
// reaches), or "... no worker computes the output head".
Result<std::vector<int>> plan_route(uint32_t n_layer, uint32_t coordinator_last,
                                    bool coordinator_head, std::span<const Candidate> workers);

}  // namespace ds4::dist
