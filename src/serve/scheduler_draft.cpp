// src/serve/scheduler_draft.cpp: MTP drafting in the server (issue 51). A decoding request drafts
// the tokens after the one it took with the MTP block (Session::draft) and the step verifies them
// as an entry of its own (StepEntry::accept, beside the other requests' rows and the other
// verifications), each draft kept by the request's own rule through the generation core -- the
// argmax when greedy, the speculative-sampling rule (sample_draft) when sampled -- so its output
// is what it would be without drafts (greedy: the same tokens; sampled: the same distribution). A
// refused draft's replacement is taken at once and evaluated by the next step (Active::carried).
//
// When it turns itself off:
// - Batch. Drafting runs while at most kDraftMaxStreams requests decode. On Flash q2 (H200, 2k,
//   bench/mtp.md and bench/serving.md) a verification of 3 rows costs 1.59 decode steps and the
//   block's 2 drafts 0.14; N streams' verifications make a step of 3N rows, which costs about
//   the N-session decode step of 3N rows. At acceptance 0.8 (2.44 tokens per verification) that
//   gives ~1.4x at 1 stream, ~1.2x at 2, ~1.0x at 4 and less beyond: 2 is the last count that
//   clearly pays. An estimate from those costs: the direct measurement of batched verifications
//   (tools/cuda/verify_all.sh multispec) is still to run.
// - Acceptance. After kJudgeAfterSteps verifications a request whose drafts kept fewer tokens per
//   verification than its drafting costs (kMinKeptPerStep) drafts no more.
#include <algorithm>
#include <array>

#include "serve/scheduler.h"
#include "serve/scheduler_parts.h"

namespace ds4::serve {
namespace {

constexpr size_t kDraftMaxStreams = 2;
constexpr int kJudgeAfterSteps = 16;
// The drafts a verification must keep to pay for itself, by drafts per verification (1 to 4): its
// step of 1 + N rows and the block's N drafts, in decode steps, less the one token it gives
// anyway (bench/mtp.md, Flash q2 on the H200 at 2k: 1.42, 1.73, 2.12 and 2.59 steps).
constexpr std::array<double, 5> kMinKeptPerStep = {0.0, 0.42, 0.73, 1.12, 1.59};

}  // namespace

bool Scheduler::drafts_now(const Slot& slot, size_t decoding) const {
  const Active& a = *slot.active;
  return options_.drafting.drafts > 0 && decoding <= kDraftMaxStreams && a.drafting &&
         a.generated < a.limit && slot.session->can_draft();
}

bool Scheduler::prepare_verification(Slot& slot, size_t room) {
  Active& a = *slot.active;
  Session& s = *slot.session;
  int n = std::min({options_.drafting.drafts, a.limit - a.generated,
                    static_cast<int>(std::min<size_t>(room, 16))});
  if (disk_) {
    // A run does not cross the next continued-save point: the session stops there, where the
    // next step saves it (before_decode), as decoding one by one would.
    if (const size_t step = continued_step(options_.cache); step != 0) {
      const size_t at = static_cast<size_t>(s.n_tokens());
      n = static_cast<int>(
          std::min<size_t>(static_cast<size_t>(n), (at / step + 1) * step - at - 1));
    }
  }
  if (n <= 0) return false;
  auto drafts = s.draft(a.next, n, options_.drafting.margin);
  if (!drafts.is_ok() || drafts->empty()) return false;
  a.run.assign(1, a.next);
  a.run.insert(a.run.end(), drafts->begin(), drafts->end());
  a.run_end.reset();
  a.carried = false;
  // Called by the step for k = 1, 2, ... with the logits after run[k - 1], until it refuses.
  a.accept = [this, &slot](int k, std::span<const float> logits) {
    Active& r = *slot.active;
    if (r.run_end) return false;
    Draw d{.slot = &slot, .draw = r.gen.draw(r.request.sampling, r.limit - r.generated)};
    d.sampled = d.draw.forced ? *d.draw.forced
                              : sample_draft(logits, d.draw.params, r.run[size_t(k)], r.rng);
    r.run_end = take_drawn(slot, d);
    // An ending token is taken but not evaluated, as decoding one by one leaves it; a refused
    // draft's replacement waits for the next step.
    if (r.run_end) return false;
    r.carried = r.next != r.run[size_t(k)];
    return !r.carried;
  };
  return true;
}

void Scheduler::after_verification(Slot& slot, const StepEntry& entry) {
  Active& a = *slot.active;
  a.acceptance.steps += 1;
  a.acceptance.drafted += static_cast<int>(entry.tokens.size()) - 1;
  a.acceptance.accepted += entry.kept - 1;
  const size_t drafts = static_cast<size_t>(std::clamp(options_.drafting.drafts, 1, 4));
  if (a.acceptance.steps >= kJudgeAfterSteps &&
      a.acceptance.accepted < kMinKeptPerStep[drafts] * a.acceptance.steps) {
    a.drafting = false;
  }
  if (a.run_end) finish(slot, *a.run_end);
}

}  // namespace ds4::serve
