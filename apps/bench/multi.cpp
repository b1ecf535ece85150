// apps/bench/multi.cpp: `ds4-bench --sessions N[,N..]` -- decode speed of N sessions advanced
// together (the server's continuous batching: one Engine::step carries one row of every session).
// For each N: N sessions are prefilled with different slices of the prompt text (ctx_start
// tokens each, so every session sits at the same position with its own routing), then
// gen_tokens steps each append every session's greedy token in one step. One CSV row per N.
// With spec_replay, each K then replays the N probes K rows per session and step (stderr lines).
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

// The N sessions decode their probes again from their snapshots, each step one Engine::step of
// N verifications of K probe tokens (greedy acceptance: every token is the model's own, so all
// are kept unless a probe token was EOS-masked). Prints the aggregate rate and the step time.
int replay_sessions(ds4::Engine& e, std::vector<std::unique_ptr<ds4::Session>>& ss,
                    const std::vector<std::vector<uint8_t>>& snaps,
                    const std::vector<std::vector<ds4::TokenId>>& probes, int k,
                    const MultiOptions& o) {
  const size_t n = ss.size();
  for (size_t i = 0; i < n; ++i) {
    if (auto st = ss[i]->load(snaps[i]); !st.is_ok()) return o.fail("snapshot load", st);
  }
  std::vector<size_t> at(n, 0);
  std::vector<ds4::Session::DraftAccept> rules;
  for (size_t i = 0; i < n; ++i) {
    rules.emplace_back([&probes, &at, i](int j, std::span<const float> logits) {
      return probes[i][at[i] + static_cast<size_t>(j)] == ds4::argmax(logits);
    });
  }
  std::vector<ds4::StepEntry> entries;
  std::vector<size_t> owner;  // entries[j] is session owner[j]'s
  int steps = 0;
  long drafted = 0, kept = 0;
  const auto g0 = std::chrono::steady_clock::now();
  for (;;) {
    entries.clear();
    owner.clear();
    for (size_t i = 0; i < n; ++i) {
      const size_t take = std::min(probes[i].size() - at[i], static_cast<size_t>(k));
      if (take == 0) continue;
      entries.push_back({.session = ss[i].get(),
                         .tokens = std::span(probes[i]).subspan(at[i], take),
                         .accept = take > 1 ? &rules[i] : nullptr});
      owner.push_back(i);
    }
    if (entries.empty()) break;
    if (auto st = e.step(entries); !st.is_ok()) return o.fail("replay step", st);
    ++steps;
    for (size_t j = 0; j < entries.size(); ++j) {
      const ds4::StepEntry& en = entries[j];
      if (!en.status.is_ok()) return o.fail("replay step entry", en.status);
      at[owner[j]] += static_cast<size_t>(en.kept);
      drafted += static_cast<long>(en.tokens.size());
      kept += en.kept;
    }
  }
  const double secs = ms_since(g0) / 1e3;
  for (size_t i = 0; i < n; ++i) {
    const std::span<const ds4::TokenId> done = ss[i]->tokens().last(probes[i].size());
    if (!std::equal(done.begin(), done.end(), probes[i].begin())) {
      return o.fail("replay", ds4::Status::internal("session %zu decoded other tokens", i));
    }
  }
  std::fprintf(stderr,
               "ds4-bench: %zu sessions at %d: replay of %d rows per session and step: %.2f t/s "
               "aggregate, %d steps, %.2f ms per step, %ld of %ld rows kept\n",
               n, o.position, k, secs > 0 ? static_cast<double>(kept) / secs : 0.0, steps,
               steps > 0 ? secs * 1e3 / steps : 0.0, kept, drafted);
  return 0;
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
               "pick_ms_mean,aggregate_tps,stream_tps\n");
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
    std::vector<std::vector<uint8_t>> snaps;
    std::vector<std::vector<ds4::TokenId>> probes(static_cast<size_t>(n));
    for (int i = 0; i < n && !o.spec_replay.empty(); ++i) {
      auto snap = ss[i]->save();
      if (!snap.is_ok()) return o.fail("snapshot of session " + std::to_string(i), snap.status());
      snaps.push_back(std::move(*snap));
    }
    e.reset_op_times();
    std::vector<double> step_ms;
    double pick_ms = 0;
    std::vector<ds4::TokenId> next(static_cast<size_t>(n));
    std::vector<ds4::StepEntry> entries(static_cast<size_t>(n));
    // Greedy picks, all sessions' in one Engine::pick (on the device where the backend picks);
    // the end token, when it is the argmax, is passed over on the host.
    ds4::Rng unused(1);
    std::vector<ds4::PickEntry> picks(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      picks[i] = {.session = ss[i].get(), .params = {.temperature = 0.0f}, .rng = &unused};
    }
    const auto g0 = std::chrono::steady_clock::now();
    for (int k = 0; k < o.gen_tokens; ++k) {
      const auto p0 = std::chrono::steady_clock::now();
      e.pick(picks);
      for (int i = 0; i < n; ++i) {
        next[i] = picks[i].token == eos ? greedy_no_eos(ss[i]->logits(), eos) : picks[i].token;
        probes[i].push_back(next[i]);
        entries[i] = {.session = ss[i].get(), .tokens = std::span<const ds4::TokenId>(&next[i], 1)};
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
    for (const int k : o.spec_replay) {
      if (const int rc = replay_sessions(e, ss, snaps, probes, k, o); rc != 0) return rc;
    }
  }
  return 0;
}

}  // namespace ds4bench
