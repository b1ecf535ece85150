// src/dist/remote_chain.h: the layers after a coordinator's slice as one LayerTail (ds4/engine.h):
// the hops of a route, each a worker's slice (remote_slice.h), called in order, the hidden state
// of one going to the next and the last returning the logits.
// Owns: the hops, one RemoteSlice per (hop, engine session) made on first use. Does not own:
// finding the route (route.h), the workers.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "dist/remote_slice.h"
#include "ds4/engine.h"

namespace ds4::dist {

class RemoteChain : public LayerTail {
 public:
  // `hops` in route order; each one's `session` field is replaced per engine session.
  explicit RemoteChain(std::vector<RemoteSliceOptions> hops) : hops_(std::move(hops)) {}

  Result<std::vector<float>> append(uint64_t session, std::span<const TokenId> tokens,
                                    std::span<const float> hidden, bool reset) override;

 private:
  std::vector<RemoteSliceOptions> hops_;
  std::mutex mu_;  // sessions_ (an engine drives its sessions from one thread; cheap insurance)
  std::map<uint64_t, std::vector<std::unique_ptr<RemoteSlice>>> sessions_;
};

}  // namespace ds4::dist
