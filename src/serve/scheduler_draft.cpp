// src/serve/scheduler_draft.cpp: MTP drafting in the server (issue 51). A request that decodes
// alone drafts the tokens after the one it took with the MTP block and verifies them in a pass of
// its own (Session::draft, Session::verify), each draft kept by the request's own rule through the
// generation core -- the argmax when greedy, the speculative-sampling rule (sample_draft) when
// sampled -- so its output is what it would be without drafts (greedy: the same tokens; sampled:
// the same distribution). A refused draft's replacement is taken at once and evaluated by the next
// step (Active::carried).
//
// When it turns itself off:
// - Batch. A verification pass belongs to one session; with several decoding requests their rows
//   share one step instead, and a pass per request would cost each of them a step's weight
//   traffic. Drafting therefore runs while one request decodes (kDraftMaxStreams): at one stream a
//   decode step is bound by reading the weights, and the verification's extra rows ride on the same
//   reads (bench/mtp.md measures the step's cost per row count).
// - Acceptance. After kJudgeAfterSteps verifications a request whose drafts kept fewer than
//   kMinKeptPerStep tokens per verification drafts no more: the drafting and the rows refused then
//   cost more than the tokens gained.
#include <algorithm>

#include "serve/scheduler.h"
#include "serve/scheduler_parts.h"

namespace ds4::serve {
namespace {

constexpr size_t kDraftMaxStreams = 1;
constexpr int kJudgeAfterSteps = 16;
// A verification of N + 1 rows costs about one decode step plus N drafts of one dense layer each
// (1/44 of a step on Flash) plus the host's round trip per draft: with two drafts, roughly 1.1 to
// 1.3 steps, so a pass must keep 0.1 to 0.3 drafts to pay for itself; 0.35 leaves room for the
// estimate's error.
constexpr double kMinKeptPerStep = 0.35;

}  // namespace

bool Scheduler::drafts_now(const Slot& slot, size_t decoding) const {
  const Active& a = *slot.active;
  return options_.drafting.drafts > 0 && decoding <= kDraftMaxStreams && a.drafting &&
         a.generated < a.limit && slot.session->can_draft();
}

bool Scheduler::speculate(Slot& slot) {
  Active& a = *slot.active;
  Session& s = *slot.session;
  int n = std::min({options_.drafting.drafts, a.limit - a.generated, 16});
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
  std::vector<TokenId> run{a.next};
  run.insert(run.end(), drafts->begin(), drafts->end());
  std::optional<FinishReason> end;
  const auto accept = [&](int k, std::span<const float> logits) {
    if (end) return false;
    Draw d{.slot = &slot, .draw = a.gen.draw(a.request.sampling, a.limit - a.generated)};
    d.sampled =
        d.draw.forced ? *d.draw.forced : sample_draft(logits, d.draw.params, run[size_t(k)], a.rng);
    end = take_drawn(slot, d);
    // An ending token is taken but not evaluated, as decoding one by one leaves it; a refused
    // draft's replacement waits for the next step.
    if (end) return false;
    a.carried = a.next != run[size_t(k)];
    return !a.carried;
  };
  a.carried = false;
  const Result<int> kept = s.verify(run, accept);
  if (!kept.is_ok()) {
    finish(slot, FinishReason::kError, kept.status());
    return true;
  }
  a.acceptance.steps += 1;
  a.acceptance.drafted += static_cast<int>(drafts->size());
  a.acceptance.accepted += *kept - 1;
  if (a.acceptance.steps >= kJudgeAfterSteps &&
      a.acceptance.accepted < kMinKeptPerStep * a.acceptance.steps) {
    a.drafting = false;
  }
  if (end) finish(slot, *end);
  return true;
}

}  // namespace ds4::serve
