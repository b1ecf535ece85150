// src/dist/remote_chain.cpp: a route's hops called in order.
#include "dist/remote_chain.h"

namespace ds4::dist {

Result<std::vector<float>> RemoteChain::append(uint64_t session, std::span<const TokenId> tokens,
                                               std::span<const float> hidden, bool reset) {
  std::vector<std::unique_ptr<RemoteSlice>>* hops = nullptr;
  {
    std::lock_guard lock(mu_);
    auto& slot = sessions_[session];
    if (slot.empty()) {
      for (RemoteSliceOptions o : hops_) {
        o.session = session;
        slot.push_back(std::make_unique<RemoteSlice>(std::move(o)));
      }
    }
    hops = &slot;
  }
  if (hops->empty()) return Status::invalid_argument("a remote chain without hops");
  std::vector<float> h(hidden.begin(), hidden.end());
  for (auto& hop : *hops) {
    DS4_ASSIGN_OR_RETURN(h, hop->append(tokens, h, reset));
  }
  return h;
}

}  // namespace ds4::dist
