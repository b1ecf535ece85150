// src/engine/pick.cpp: see pick.h. A device draw takes its uniform from the request's generator
// before the launch, as the host's draw would, and gives it back when the device reports that the
// draw used none (no finite logit), so the generator advances exactly as Session::sample's.
#include "engine/pick.h"

#include <algorithm>
#include <vector>

#include "base/check.h"

namespace ds4 {
namespace {

bool greedy(const SamplingParams& p) { return !(p.temperature > 0.0f); }

// The draws the device makes: greedy, or over the whole vocabulary (sampler.cpp's weights()).
bool device_rule(const SamplingParams& p) {
  const float top_p = (p.top_p > 0.0f && p.top_p <= 1.0f) ? p.top_p : 1.0f;
  return greedy(p) || (p.top_k <= 0 && top_p >= 1.0f);
}

}  // namespace

void pick_tokens(Engine::Impl& e, std::span<const Session::Impl* const> sessions,
                 std::span<PickEntry> entries, const ParallelFor& parallel_for) {
  DS4_CHECK(sessions.size() == entries.size());
  std::vector<backend::PickRow> rows;
  std::vector<size_t> on_device, on_host;
  std::vector<Rng> before;
  const bool device = e.backend->picks_tokens();
  for (size_t i = 0; i < entries.size(); ++i) {
    PickEntry& en = entries[i];
    DS4_CHECK(en.rng != nullptr && sessions[i]->engine == &e);
    const backend::Act* row = device ? sessions[i]->logits.device() : nullptr;
    if (row == nullptr || !device_rule(en.params)) {
      on_host.push_back(i);
      continue;
    }
    before.push_back(*en.rng);
    const float u = greedy(en.params) ? 0.0f : en.rng->uniform();
    rows.push_back({.logits = *row,
                    .temperature = en.params.temperature,
                    .min_p = std::max(en.params.min_p, 0.0f),
                    .uniform = u});
    on_device.push_back(i);
  }
  if (!rows.empty()) {
    std::vector<backend::Picked> out(rows.size());
    e.backend->pick_tokens(rows, out);
    for (size_t k = 0; k < rows.size(); ++k) {
      PickEntry& en = entries[on_device[k]];
      en.token = out[k].token;
      if (!greedy(en.params) && !out[k].drew) *en.rng = before[k];  // no uniform used
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
