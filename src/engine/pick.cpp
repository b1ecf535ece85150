// src/engine/pick.cpp: see pick.h. A device draw takes its uniform from the request's generator
// before the launch, as the host's draw would, and gives it back when the device reports that the
// draw used none (no finite logit), so the generator advances exactly as Session::sample's.
#include "engine/pick.h"

#include <vector>

#include "base/check.h"

namespace ds4 {

void pick_tokens(Engine::Impl& e, std::span<const Session::Impl* const> sessions,
                 std::span<PickEntry> entries, const ParallelFor& parallel_for) {
  DS4_CHECK(sessions.size() == entries.size());
  std::vector<backend::PickRow> rows;
  std::vector<size_t> on_device, on_host;
  std::vector<Rng> before;
  std::vector<bool> greedy;
  const bool device = e.backend->picks_tokens();
  for (size_t i = 0; i < entries.size(); ++i) {
    PickEntry& en = entries[i];
    DS4_CHECK(en.rng != nullptr && sessions[i]->engine == &e);
    const backend::Act* row = device ? sessions[i]->logits.device() : nullptr;
    const DrawRule rule = draw_rule(en.params);
    if (row == nullptr || rule.kind == DrawRule::kSorted) {  // the device makes the other two
      on_host.push_back(i);
      continue;
    }
    before.push_back(*en.rng);
    greedy.push_back(rule.kind == DrawRule::kGreedy);
    rows.push_back({.logits = *row,
                    .temperature = greedy.back() ? 0.0f : en.params.temperature,
                    .min_p = rule.min_p,
                    .uniform = greedy.back() ? 0.0f : en.rng->uniform()});
    on_device.push_back(i);
  }
  if (!rows.empty()) {
    std::vector<backend::Picked> out(rows.size());
    e.backend->pick_tokens(rows, out);
    for (size_t k = 0; k < rows.size(); ++k) {
      PickEntry& en = entries[on_device[k]];
      en.token = out[k].token;
      if (!greedy[k] && !out[k].drew) *en.rng = before[k];  // no uniform used
    }
  }
  // The host copies first, one after another (downloads on the backend's stream), then the draws.
  for (size_t i : on_host) (void)sessions[i]->logits.host();
  auto draw = [&](int64_t k) {
    const size_t i = on_host[static_cast<size_t>(k)];
    entries[i].token = sample(sessions[i]->logits.host(), entries[i].params, *entries[i].rng);
  };
  const auto n = static_cast<int64_t>(on_host.size());
  if (parallel_for && n > 1) {
    parallel_for(n, draw);
  } else {
    for (int64_t k = 0; k < n; ++k) draw(k);
  }
}

void Engine::pick(std::span<PickEntry> entries, const ParallelFor& parallel_for) {
  std::vector<const Session::Impl*> sessions(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    DS4_CHECK(entries[i].session != nullptr);
    sessions[i] = entries[i].session->impl_.get();
  }
  pick_tokens(*impl_, sessions, entries, parallel_for);
}

}  // namespace ds4
