// src/dist/route.cpp: registration checks and the route search.
#include "dist/route.h"

#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>

namespace ds4::dist {
namespace {

struct Search {
  uint32_t n_layer;
  bool coordinator_head;
  std::vector<Candidate> sorted;
  uint32_t deepest = 0;  // the first layer no chain tried so far reaches
  bool head_missing = false;

  // Extends a chain that has covered layers up to `next - 1`.
  bool from(uint32_t next, std::vector<int>* hops) {
    if (next == n_layer) return true;
    deepest = std::max(deepest, next);
    for (const Candidate& c : sorted) {
      if (c.first != next || c.last < c.first || c.last >= n_layer) continue;
      const bool ends = c.last + 1 == n_layer;
      if (ends && !c.output && !coordinator_head) {
        head_missing = true;
        continue;
      }
      hops->push_back(c.index);
      if (from(c.last + 1, hops)) return true;
      hops->pop_back();
    }
    return false;
  }
};

}  // namespace

Hello hello_of(const ModelInfo& info, std::string_view build, int ctx) {
  return Hello{.build = std::string(build),
               .fingerprint = info.fingerprint,
               .shape = info.shape,
               .n_layer = static_cast<uint32_t>(info.n_layer),
               .n_vocab = static_cast<uint32_t>(info.n_vocab),
               .hidden_width = static_cast<uint32_t>(info.hidden_width),
               .expert_bits = static_cast<uint32_t>(info.expert_bits),
               .layer_first = static_cast<uint32_t>(info.layer_first),
               .layer_last = static_cast<uint32_t>(info.layer_last),
               .output = info.layer_output,
               .ctx = static_cast<uint32_t>(ctx)};
}

uint64_t draw_incarnation() {
  std::random_device rd;
  const uint64_t clock =
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  const uint64_t id = ((uint64_t{rd()} << 32) ^ rd() ^ clock * 0x9e3779b97f4a7c15ull);
  return id == 0 ? 1 : id;
}

bool is_loopback_endpoint(const std::string& tcp_endpoint) {
  std::string rest = tcp_endpoint.rfind("tcp://", 0) == 0 ? tcp_endpoint.substr(6) : tcp_endpoint;
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return false;
  std::string host = rest.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

Status check_listen(const std::string& endpoint, bool keyed) {
  if (keyed || is_loopback_endpoint(endpoint)) return Status::ok();
  return Status::invalid_argument("listening on %s beyond loopback needs a cluster key",
                                  endpoint.c_str());
}

Status check_registration(const Hello& coordinator, const Hello& worker) {
  std::string diff;
  const auto differs = [&](const char* what, const std::string& want, const std::string& got) {
    if (want != got)
      diff += std::string(diff.empty() ? "" : "; ") + what + " " + got +
              " (the coordinator's: " + want + ")";
  };
  differs("build", coordinator.build, worker.build);
  differs("model", coordinator.fingerprint, worker.fingerprint);
  differs("shape", coordinator.shape, worker.shape);
  differs("layers", std::to_string(coordinator.n_layer), std::to_string(worker.n_layer));
  differs("vocabulary", std::to_string(coordinator.n_vocab), std::to_string(worker.n_vocab));
  differs("hidden width", std::to_string(coordinator.hidden_width),
          std::to_string(worker.hidden_width));
  if (worker.ctx < coordinator.ctx) {
    diff += std::string(diff.empty() ? "" : "; ") + "context " + std::to_string(worker.ctx) +
            " (below the coordinator's " + std::to_string(coordinator.ctx) + ")";
  }
  if (worker.layer_first == 0) {
    diff += std::string(diff.empty() ? "" : "; ") + "layers from 0 (the coordinator's)";
  }
  if (diff.empty()) return Status::ok();
  return Status::invalid_argument("worker refused: %s", diff.c_str());
}

Result<std::vector<int>> plan_route(uint32_t n_layer, uint32_t coordinator_last,
                                    bool coordinator_head, std::span<const Candidate> workers) {
  std::vector<int> hops;
  if (coordinator_last + 1 >= n_layer) {
    if (coordinator_head) return hops;
    return Status::unavailable("distributed route incomplete: no worker computes the output head");
  }
  Search s{.n_layer = n_layer,
           .coordinator_head = coordinator_head,
           .sorted = {workers.begin(), workers.end()}};
  std::stable_sort(s.sorted.begin(), s.sorted.end(), [](const Candidate& a, const Candidate& b) {
    if (a.first != b.first) return a.first < b.first;
    if (a.output != b.output) return a.output;
    return a.last > b.last;
  });
  if (s.from(coordinator_last + 1, &hops)) return hops;
  if (s.head_missing) {
    return Status::unavailable(
        "distributed route incomplete: no worker computes the output head (a chain reaches layer "
        "%u without it)",
        n_layer - 1);
  }
  return Status::unavailable("distributed route incomplete: missing layer %u", s.deepest);
}

}  // namespace ds4::dist
