// src/engine/step.cpp: Engine::step -- several sessions advanced in one backend forward pass
// (continuous batching, design/server.md: decode rows of running requests plus prefill chunks of
// new ones). Every entry is checked before any state changes; the accepted entries' rows form one
// batch, each row tagged with its session's sequence and absolute position, so the backend keeps
// attention, compressor and indexer state per sequence and groups the expert products of all rows.
#include <string>

#include "engine/engine_impl.h"
#include "engine/session_impl.h"

namespace ds4 {
namespace {

// Why entry i cannot run, before looking at its tokens: no session, another engine's session, or
// a session that another entry names too.
Status check_entry_session(std::span<const StepEntry> entries, size_t i, const Engine::Impl* engine,
                           const Session::Impl* impl) {
  if (entries[i].session == nullptr)
    return Status::invalid_argument("step entry %zu has no session", i);
  if (impl->engine != engine)
    return Status::invalid_argument("step entry %zu: the session belongs to another engine", i);
  // Quadratic, but a step holds at most a few hundred entries and this allocates nothing.
  for (size_t j = 0; j < entries.size(); ++j) {
    if (j != i && entries[j].session == entries[i].session) {
      return Status::invalid_argument("step entries %zu and %zu name the same session", i, j);
    }
  }
  return Status::ok();
}

}  // namespace

Status Engine::step(std::span<StepEntry> entries) {
  Impl& e = *impl_;
  auto impl_of = [](const StepEntry& en) { return en.session->impl_.get(); };
  if (e.gives_logits() && !e.whole_model()) {
    // The first layers here, the rest behind a LayerTail (distributed inference): each entry goes
    // through the slice and the tail in turn -- the same logits as a batch, one entry at a time.
    for (size_t i = 0; i < entries.size(); ++i) {
      StepEntry& en = entries[i];
      en.status = check_entry_session(entries, i, &e, en.session ? impl_of(en) : nullptr);
      en.kept = 0;
      // A verification takes rows back: Session::verify's refusal of a split model.
      if (en.status.is_ok() && en.accept != nullptr) en.status = impl_of(en)->whole_model();
      if (en.status.is_ok()) en.status = impl_of(en)->append(en.tokens, nullptr).status();
      if (en.status.is_ok()) en.kept = static_cast<int>(en.tokens.size());
    }
    return Status::ok();
  }
  if (!e.whole_model()) {
    const Status st = Status::invalid_argument(
        "this engine computes layers %d..%d only: a batched step needs the whole model",
        e.range.begin, e.range.end - 1);
    for (StepEntry& en : entries) en.status = st;
    return st;
  }
  int64_t total = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    StepEntry& en = entries[i];
    en.status = check_entry_session(entries, i, &e, en.session ? impl_of(en) : nullptr);
    en.kept = 0;
    if (en.status.is_ok()) {
      const Session::Impl& s = *impl_of(en);
      en.status = s.check_tokens(en.tokens, s.tokens.size());
      if (!en.status.is_ok()) en.status = en.status.with_context("step entry " + std::to_string(i));
    }
    if (en.status.is_ok()) total += static_cast<int64_t>(en.tokens.size());
  }
  if (total > kMaxStepRows) {
    const Status err = Status::invalid_argument("a step of %lld rows exceeds the limit of %d",
                                                static_cast<long long>(total), kMaxStepRows);
    for (StepEntry& en : entries) en.status = err;
    return err;
  }
  // Verifications: their sequences marked, so that the rejected rows can be taken back.
  for (StepEntry& en : entries) {
    if (en.accept == nullptr || !en.status.is_ok() || en.tokens.empty()) continue;
    Session::Impl& s = *impl_of(en);
    if (s.logits.empty()) en.status = Status::unavailable("no logits yet: append tokens first");
    if (en.status.is_ok()) en.status = e.backend->mark_sequence(s.seq);
    if (!en.status.is_ok()) total -= static_cast<int64_t>(en.tokens.size());
  }
  if (total == 0) return Status::ok();

  // One batch: the entries' rows in entry order, the logits wanted after each entry's last row
  // (after every row of a verification).
  e.step_rows.clear();
  e.step_logit_rows.clear();
  for (const StepEntry& en : entries) {
    if (!en.status.is_ok() || en.tokens.empty()) continue;
    const Session::Impl& s = *impl_of(en);
    const auto pos0 = static_cast<int32_t>(s.tokens.size());
    for (size_t k = 0; k < en.tokens.size(); ++k) {
      e.step_rows.push_back(s.tag(pos0 + static_cast<int32_t>(k), en.tokens[k]));
      if (en.accept != nullptr)
        e.step_logit_rows.push_back(static_cast<int>(e.step_rows.size()) - 1);
    }
    if (en.accept == nullptr) e.step_logit_rows.push_back(static_cast<int>(e.step_rows.size()) - 1);
  }
  e.forward->reserve(static_cast<int>(total));
  const backend::Act out = e.logits_view(static_cast<int64_t>(e.step_logit_rows.size()));
  const auto unit = e.power.start();
  e.forward->run(e.step_rows, e.step_logit_rows, out);

  const int n_vocab = e.shape.n_vocab;
  int64_t logit_row = 0;
  int r0 = 0, mtp_rows = 0;
  e.step_sessions.clear();
  for (StepEntry& en : entries) {
    if (!en.status.is_ok() || en.tokens.empty()) continue;
    Session::Impl& s = *impl_of(en);
    const int n = static_cast<int>(en.tokens.size());
    if (en.accept != nullptr) {
      e.verify_logits.resize(static_cast<size_t>(n) * n_vocab);
      e.backend->download(backend::Act{out.row(logit_row), n, n_vocab}, e.verify_logits.data());
      logit_row += n;
      const auto pos0 = static_cast<int32_t>(s.tokens.size());
      const Result<int> kept = s.keep_verified(en.tokens, pos0, *en.accept, e.verify_logits);
      en.status = kept.status();
      en.kept = kept.is_ok() ? *kept : 0;
    } else {
      s.tokens.insert(s.tokens.end(), en.tokens.begin(), en.tokens.end());
      s.logits.take(backend::Act{out.row(logit_row++), 1, n_vocab}, /*wait=*/false);
      en.kept = n;
    }
    if (en.kept > 0) {
      e.step_sessions.push_back({&s, r0, en.kept});
      mtp_rows += s.mtp_rows(en.kept);
    }
    r0 += n;
  }
  e.backend->wait_idle();  // the rows the logits took are copied: the step's pass is done
  if (e.mtp) e.advance_mtp(mtp_rows);
  e.pace(unit);
  return Status::ok();
}

// The MTP block's rows that the step completes, every session's in one pass of the block (the
// step's hidden states are still the forward's).
void Engine::Impl::advance_mtp(int rows) {
  const backend::Act in = mtp_in_view(std::max(rows, 1));
  mtp_tags.clear();
  for (const SteppedSession& st : step_sessions) {
    st.session->mtp_collect(static_cast<int>(st.session->tokens.size()) - st.kept, st.kept, st.r0,
                            in, &mtp_tags);
  }
  if (mtp_tags.empty()) return;
  forward->run_mtp(*mtp, mtp_tags, backend::Act{in.data, int64_t(mtp_tags.size()), in.cols}, {},
                   {});
}

}  // namespace ds4
