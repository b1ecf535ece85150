// tests/model/batch_driver.h: a miniature of the server scheduler (design/server.md) for the
// batching exactness tests. Requests (plans) arrive at given steps, prefill their prompt in
// chunks, decode greedy tokens, then finish and drop their session. The same plans run either all
// together through Engine::step (one forward pass per step: decode rows mixed with prefill chunks)
// or each alone through Session::append with the same token groups (the reference).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ds4/engine.h"

namespace ds4::test {

struct BatchPlan {
  std::vector<TokenId> prompt;
  int start_step = 0;  // the step at which the request arrives
  int chunk = 64;      // prompt rows per step
  int n_decode = 0;    // greedy tokens after the prompt; then the request finishes
  int n_ctx = 512;
};

// What one entry of a plan did: at which step, from which position, how many rows, and the
// next-token logits it left.
struct EntryTrace {
  int step = 0;
  int pos0 = 0;
  int n = 0;
  std::vector<float> logits;
};

struct PlanTrace {
  std::vector<EntryTrace> entries;
  std::vector<TokenId> generated;
  int finished_at = -1;  // the last step the plan took part in
};

struct StepShape {
  int entries = 0;
  int rows = 0;
};

struct BatchRun {
  std::vector<PlanTrace> plans;
  std::vector<StepShape> steps;  // batched runs only
};

// The schedule of the batching tests for a generated model ("tiny-q2", "small-f32", ...): requests
// arriving at different steps, prompts chunked across compression boundaries (positions 127 and,
// on small, 255) beside decode rows, one request finishing while the others run on.
std::vector<BatchPlan> batch_plans_for(const std::string& model);

// Each plan alone, Session::append per entry.
BatchRun run_alone(Engine& engine, std::span<const BatchPlan> plans);
// All plans together, one Engine::step per step; every entry must be accepted.
BatchRun run_batched(Engine& engine, std::span<const BatchPlan> plans);

// Whether some step held at least two entries and an entry of at least min_rows rows whose rows
// cross position p -- e.g. p = 127 emits a ratio-128 compressed row.
bool mixed_step_crosses(const BatchRun& run, int p, int min_rows = 1);
// Whether some step held a prefill chunk (n > 1) and a decode row (n == 1) of different plans.
bool mixed_prefill_and_decode(const BatchRun& run);

// Compares a plan's batched trace with its alone trace: same entries, same greedy tokens, and
// logits bit-identical (max_rel_l2 == 0) or within max_rel_l2. Returns "" or what differs.
std::string compare_traces(const PlanTrace& alone, const PlanTrace& batched, double max_rel_l2);

// How far a plan's batched logits are from its alone logits (entries of the same schedule).
struct TraceDistance {
  int entries = 0;
  int bit_identical = 0;
  double max_rel_l2 = 0.0;
};
TraceDistance trace_distance(const PlanTrace& alone, const PlanTrace& batched);

}  // namespace ds4::test
