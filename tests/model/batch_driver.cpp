// tests/model/batch_driver.cpp: the miniature scheduler of batch_driver.h.
#include "batch_driver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "model_test_util.h"

namespace ds4::test {
namespace {

// One request's progress: its session and how much of its plan is done.
struct Live {
  const BatchPlan* plan = nullptr;
  std::unique_ptr<Session> session;
  size_t prompt_done = 0;
  std::vector<TokenId> pending;  // the tokens of this step's entry
  bool done = false;
};

// The tokens of the plan's next entry (empty when the plan is complete).
std::vector<TokenId> next_tokens(Live& l, PlanTrace& trace) {
  const BatchPlan& p = *l.plan;
  if (l.prompt_done < p.prompt.size()) {
    const size_t n = std::min(p.prompt.size() - l.prompt_done, static_cast<size_t>(p.chunk));
    std::vector<TokenId> t(p.prompt.begin() + static_cast<std::ptrdiff_t>(l.prompt_done),
                           p.prompt.begin() + static_cast<std::ptrdiff_t>(l.prompt_done + n));
    l.prompt_done += n;
    return t;
  }
  if (static_cast<int>(trace.generated.size()) < p.n_decode) {
    trace.generated.push_back(argmax_of(l.session->logits()));
    return {trace.generated.back()};
  }
  return {};
}

Live start(Engine& engine, const BatchPlan& plan) {
  Live l;
  l.plan = &plan;
  auto s = engine.create_session({.n_ctx = plan.n_ctx, .prefill_chunk = plan.chunk});
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  if (s.is_ok()) l.session = std::move(s).value();
  return l;
}

void record(const Live& l, int step, int n, PlanTrace& trace) {
  const auto logits = l.session->logits();
  trace.entries.push_back(
      {step, l.session->n_tokens() - n, n, std::vector<float>(logits.begin(), logits.end())});
  trace.finished_at = step;
}

}  // namespace

namespace {

// Four requests on the tiny shape (window 16, indexer top-k 4): arrivals at steps 0, 0, 2 and 4;
// plan 1 finishes at step 6 while the others run on; plan 0 decodes across position 127 and
// plan 2's third chunk (positions 96..143) crosses it next to decode rows.
std::vector<BatchPlan> tiny_plans() {
  return {
      {.prompt = test_prompt(120, 1), .start_step = 0, .chunk = 50, .n_decode = 12},
      {.prompt = test_prompt(9, 2), .start_step = 0, .chunk = 64, .n_decode = 6},
      {.prompt = test_prompt(150, 3), .start_step = 2, .chunk = 48, .n_decode = 5},
      {.prompt = test_prompt(3, 4), .start_step = 4, .chunk = 64, .n_decode = 10},
  };
}

// The small shape (window 128, top-k 64): plan 1's chunks of 100 cross 127 and 255 (the indexer
// then keeps 64 of more rows) beside decode rows; plan 2 decodes across 127; plan 0 finishes
// early.
std::vector<BatchPlan> small_plans() {
  return {
      {.prompt = test_prompt(40, 5), .start_step = 0, .chunk = 64, .n_decode = 4},
      {.prompt = test_prompt(300, 6), .start_step = 1, .chunk = 100, .n_decode = 3},
      {.prompt = test_prompt(124, 7), .start_step = 0, .chunk = 124, .n_decode = 8},
  };
}

}  // namespace

std::vector<BatchPlan> batch_plans_for(const std::string& model) {
  return model.rfind("small", 0) == 0 ? small_plans() : tiny_plans();
}

BatchRun run_alone(Engine& engine, std::span<const BatchPlan> plans) {
  BatchRun run;
  run.plans.resize(plans.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    Live l = start(engine, plans[i]);
    if (l.session == nullptr) return run;
    for (int step = plans[i].start_step;; ++step) {
      const std::vector<TokenId> t = next_tokens(l, run.plans[i]);
      if (t.empty()) break;
      const auto r = l.session->append(t);
      EXPECT_TRUE(r.is_ok()) << r.status().message();
      if (!r.is_ok()) return run;
      record(l, step, static_cast<int>(t.size()), run.plans[i]);
    }
  }
  return run;
}

BatchRun run_batched(Engine& engine, std::span<const BatchPlan> plans) {
  BatchRun run;
  run.plans.resize(plans.size());
  std::vector<Live> live(plans.size());
  std::vector<StepEntry> entries;
  std::vector<size_t> owner;
  for (int step = 0;; ++step) {
    entries.clear();
    owner.clear();
    bool waiting = false;
    for (size_t i = 0; i < plans.size(); ++i) {
      if (live[i].done) continue;
      if (plans[i].start_step > step) {
        waiting = true;
        continue;
      }
      if (live[i].session == nullptr) live[i] = start(engine, plans[i]);
      if (live[i].session == nullptr) return run;
      live[i].pending = next_tokens(live[i], run.plans[i]);
      if (live[i].pending.empty()) {  // finished: drop it from every later step
        live[i].session.reset();
        live[i].done = true;
        continue;
      }
      entries.push_back({.session = live[i].session.get(), .tokens = live[i].pending});
      owner.push_back(i);
    }
    if (entries.empty() && !waiting) break;
    if (entries.empty()) continue;
    const Status st = engine.step(entries);
    EXPECT_TRUE(st.is_ok()) << st.message();
    StepShape shape{static_cast<int>(entries.size()), 0};
    for (size_t k = 0; k < entries.size(); ++k) {
      EXPECT_TRUE(entries[k].status.is_ok()) << entries[k].status.message();
      const int n = static_cast<int>(entries[k].tokens.size());
      shape.rows += n;
      record(live[owner[k]], step, n, run.plans[owner[k]]);
    }
    run.steps.push_back(shape);
    if (!st.is_ok()) return run;
  }
  return run;
}

bool mixed_step_crosses(const BatchRun& run, int p, int min_rows) {
  for (const PlanTrace& t : run.plans) {
    for (const EntryTrace& e : t.entries) {
      if (e.n < min_rows || e.pos0 > p || e.pos0 + e.n <= p) continue;
      for (size_t j = 0; j < run.plans.size(); ++j) {  // another plan in the same step?
        if (&run.plans[j] == &t) continue;
        for (const EntryTrace& o : run.plans[j].entries)
          if (o.step == e.step) return true;
      }
    }
  }
  return false;
}

bool mixed_prefill_and_decode(const BatchRun& run) {
  for (size_t i = 0; i < run.plans.size(); ++i) {
    for (const EntryTrace& e : run.plans[i].entries) {
      if (e.n < 2) continue;
      for (size_t j = 0; j < run.plans.size(); ++j) {
        if (j == i) continue;
        for (const EntryTrace& o : run.plans[j].entries)
          if (o.step == e.step && o.n == 1) return true;
      }
    }
  }
  return false;
}

TraceDistance trace_distance(const PlanTrace& alone, const PlanTrace& batched) {
  TraceDistance d;
  const size_t n = std::min(alone.entries.size(), batched.entries.size());
  for (size_t k = 0; k < n; ++k) {
    const std::vector<float>& a = alone.entries[k].logits;
    const std::vector<float>& b = batched.entries[k].logits;
    if (a.size() != b.size()) continue;
    ++d.entries;
    if (std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0) ++d.bit_identical;
    d.max_rel_l2 = std::max(d.max_rel_l2, rel_l2(b, a));
  }
  return d;
}

std::string compare_traces(const PlanTrace& alone, const PlanTrace& batched, double max_rel_l2) {
  if (alone.entries.size() != batched.entries.size()) {
    return "entries: alone " + std::to_string(alone.entries.size()) + ", batched " +
           std::to_string(batched.entries.size());
  }
  for (size_t k = 0; k < alone.entries.size(); ++k) {
    const EntryTrace& a = alone.entries[k];
    const EntryTrace& b = batched.entries[k];
    const std::string where = "entry " + std::to_string(k) + " (step " + std::to_string(a.step) +
                              ", positions " + std::to_string(a.pos0) + ".." +
                              std::to_string(a.pos0 + a.n - 1) + ")";
    if (a.step != b.step || a.pos0 != b.pos0 || a.n != b.n) return where + ": another schedule";
    if (a.logits.size() != b.logits.size()) return where + ": logits of another size";
    if (max_rel_l2 == 0.0) {
      if (std::memcmp(a.logits.data(), b.logits.data(), a.logits.size() * sizeof(float)) != 0)
        return where + ": logits not bit-identical (rel L2 " +
               std::to_string(rel_l2(b.logits, a.logits)) + ")";
    } else if (rel_l2(b.logits, a.logits) > max_rel_l2) {
      return where + ": logits rel L2 " + std::to_string(rel_l2(b.logits, a.logits));
    }
  }
  if (alone.generated != batched.generated) return "greedy tokens differ";
  return "";
}

}  // namespace ds4::test
