// src/engine/speculate.cpp: Session::verify -- drafted tokens checked in one batch, the
// rejected ones taken back exactly (the backend's mark / rewind), for speculative decoding
// (model.md §8, issue 51).
#include "ds4/sampling.h"
#include "engine/session_impl.h"

namespace ds4 {

Result<int> Session::verify_greedy(std::span<const TokenId> drafts) {
  if (drafts.empty() || impl_->logits.empty()) return 0;
  if (drafts[0] != argmax(impl_->logits.host())) {  // the first draft is not what greedy decodes
    DS4_TRY(impl_->whole_model());
    DS4_TRY(impl_->check_tokens(drafts, impl_->tokens.size()));
    return 0;
  }
  return verify(drafts, [&drafts](int k, std::span<const float> logits) {
    return drafts[size_t(k)] == argmax(logits);
  });
}

Result<int> Session::verify(std::span<const TokenId> run, const DraftAccept& accept) {
  Impl& s = *impl_;
  DS4_TRY(s.whole_model());
  if (s.logits.empty()) return Status::unavailable("no logits yet: append tokens first");
  if (run.empty()) return 0;
  DS4_TRY(s.check_tokens(run, s.tokens.size()));
  Engine::Impl& e = *s.engine;
  const int n = static_cast<int>(run.size());
  const auto pos0 = static_cast<int32_t>(s.tokens.size());
  std::vector<backend::RowTag> rows;
  std::vector<int> want;
  for (int k = 0; k < n; ++k) {
    rows.push_back(s.tag(pos0 + k, run[k]));
    want.push_back(k);
  }
  DS4_TRY(e.backend->mark_sequence(s.seq));
  e.forward->reserve(n);
  const backend::Act out = e.logits_view(n);
  const auto unit = e.power.start();
  e.forward->run(rows, want, out);
  std::vector<float> all(static_cast<size_t>(n) * e.shape.n_vocab);
  e.backend->download(out, all.data());
  DS4_ASSIGN_OR_RETURN(const int kept, s.keep_verified(run, pos0, accept, all));
  s.mtp_advance(pos0, kept);  // the kept rows' hidden states are still the pass's
  e.pace(unit);
  return kept;
}

Result<int> Session::Impl::keep_verified(std::span<const TokenId> run, int32_t pos0,
                                         const Session::DraftAccept& accept,
                                         std::span<const float> all) {
  Engine::Impl& e = *engine;
  const int n = static_cast<int>(run.size());
  const size_t n_vocab = static_cast<size_t>(e.shape.n_vocab);
  const auto logits_after = [&](int k) {
    return all.subspan(static_cast<size_t>(k) * n_vocab, n_vocab);
  };
  // run[k] is kept while the caller accepts it after run[k - 1].
  int kept = 1;
  while (kept < n && accept(kept, logits_after(kept - 1))) ++kept;
  const Status back = e.backend->rewind_sequence(seq, pos0 + kept);
  e.backend->settle_sequence(seq);
  if (!back.is_ok()) {
    reset();  // the state holds rows the transcript does not: start again from nothing
    return back;
  }
  tokens.insert(tokens.end(), run.begin(), run.begin() + kept);
  const std::span<const float> last = logits_after(kept - 1);
  logits.assign(last);
  return kept;
}

}  // namespace ds4
