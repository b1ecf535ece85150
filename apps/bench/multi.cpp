// apps/bench/multi.cpp: `ds4-bench --sessions N[,N..]` -- decode speed of N sessions advanced
// together (the server's continuous batching: one Engine::step carries one row of every session).
// For each N: N sessions are prefilled with different slices of the prompt text (ctx_start
// tokens each, so every session sits at the same position with its own routing), then
// gen_tokens steps each append every session's greedy token in one step. One CSV row per N.
#include "multi.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "ds4/sampling.h"

namespace ds4bench {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  return v[i];
}

}  // namespace

ds4::TokenId greedy_no_eos(std::span<const float> logits, ds4::TokenId eos) {
  const ds4::TokenId best = ds4::argmax(logits);
  if (best != eos || eos < 0) return best;
  std::vector<float> masked(logits.begin(), logits.end());
  masked[static_cast<size_t>(eos)] = ds4::kNegInf;
  return ds4::argmax(masked);
}

int run_sessions(ds4::Engine& e, const std::vector<ds4::TokenId>& body, ds4::TokenId bos,
                 ds4::TokenId eos, const MultiOptions& o, FILE* csv) {
  std::fprintf(csv,
               "sessions,position,prefill_s,steps,step_ms_mean,step_ms_p50,step_ms_p90,"
               "host_pick_ms_mean,aggregate_tps,stream_tps\n");
  std::fflush(csv);
  for (const int n : o.sessions) {
    std::vector<std::unique_ptr<ds4::Session>> ss;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
      auto s = e.create_session({.n_ctx = o.ctx, .prefill_chunk = o.prefill_chunk});
      if (!s.is_ok()) return o.fail("session " + std::to_string(i), s.status());
      // Session i reads the text from its own offset (body repeats the text as needed).
      std::vector<ds4::TokenId> prompt{bos};
      const size_t off = static_cast<size_t>(i) * o.stride;
      prompt.insert(prompt.end(), body.begin() + static_cast<std::ptrdiff_t>(off),
                    body.begin() + static_cast<std::ptrdiff_t>(off + o.position - 1));
      auto app = (*s)->append(prompt);
      if (!app.is_ok()) return o.fail("prefill of session " + std::to_string(i), app.status());
      ss.push_back(std::move(*s));
    }
    const double prefill_s = ms_since(t0) / 1e3;
    e.reset_op_times();
    std::vector<double> step_ms;
    double pick_ms = 0;
    std::vector<ds4::TokenId> next(static_cast<size_t>(n));
    std::vector<ds4::StepEntry> entries(static_cast<size_t>(n));
    const auto g0 = std::chrono::steady_clock::now();
    for (int k = 0; k < o.gen_tokens; ++k) {
      const auto p0 = std::chrono::steady_clock::now();
      for (int i = 0; i < n; ++i) {
        next[i] = greedy_no_eos(ss[i]->logits(), eos);
        entries[i] = {ss[i].get(), std::span<const ds4::TokenId>(&next[i], 1), {}};
      }
      pick_ms += ms_since(p0);
      const auto s0 = std::chrono::steady_clock::now();
      if (auto st = e.step(entries); !st.is_ok()) return o.fail("step", st);
      for (const ds4::StepEntry& en : entries) {
        if (!en.status.is_ok()) return o.fail("step entry", en.status);
      }
      step_ms.push_back(ms_since(s0));
    }
    const double gen_s = ms_since(g0) / 1e3;
    double sum = 0;
    for (double v : step_ms) sum += v;
    const double mean = step_ms.empty() ? 0 : sum / static_cast<double>(step_ms.size());
    const double agg = gen_s > 0 ? static_cast<double>(n) * o.gen_tokens / gen_s : 0;
    std::fprintf(csv, "%d,%d,%.3f,%d,%.3f,%.3f,%.3f,%.3f,%.2f,%.2f\n", n, o.position, prefill_s,
                 o.gen_tokens, mean, percentile(step_ms, 0.5), percentile(step_ms, 0.9),
                 pick_ms / std::max(1, o.gen_tokens), agg, agg / n);
    std::fflush(csv);
    std::fprintf(stderr,
                 "ds4-bench: %d sessions at %d: step %.2f ms (p50 %.2f), %.2f t/s aggregate, "
                 "%.2f per stream\n",
                 n, o.position, mean, percentile(step_ms, 0.5), agg, agg / n);
    if (o.op_times) {
      std::string line = "ds4-bench: " + std::to_string(n) + " sessions: host ms per step:";
      char buf[64];
      for (const ds4::OpTime& t : e.op_times()) {
        if (t.calls == 0) continue;
        std::snprintf(buf, sizeof buf, " %s %.3f", std::string(t.op).c_str(),
                      1e3 * t.seconds / std::max(1, o.gen_tokens));
        line += buf;
      }
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }
  return 0;
}

}  // namespace ds4bench
