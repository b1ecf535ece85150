// src/engine/speculate.cpp: Session::verify_greedy -- drafted tokens checked in one batch, the
// rejected ones taken back exactly (the backend's mark / rewind), for speculative decoding
// (model.md §8, issue 51).
#include "ds4/sampling.h"
#include "engine/session_impl.h"

namespace ds4 {

Result<int> Session::verify_greedy(std::span<const TokenId> drafts) {
  Impl& s = *impl_;
  DS4_TRY(s.whole_model());
  if (drafts.empty() || s.logits.empty()) return 0;
  DS4_TRY(s.check_tokens(drafts, s.tokens.size()));
  if (drafts[0] != argmax(s.logits)) return 0;  // the first draft is not what greedy decodes
  Engine::Impl& e = *s.engine;
  const int n = static_cast<int>(drafts.size());
  const auto pos0 = static_cast<int32_t>(s.tokens.size());
  std::vector<backend::RowTag> rows;
  std::vector<int> want;
  for (int k = 0; k < n; ++k) {
    rows.push_back({s.seq, pos0 + k, drafts[k]});
    want.push_back(k);
  }
  DS4_TRY(e.backend->mark_sequence(s.seq));
  e.forward->reserve(n);
  const backend::Act out = e.logits_view(n);
  e.forward->run(rows, want, out);
  const int n_vocab = e.shape.n_vocab;
  std::vector<float> all(static_cast<size_t>(n) * n_vocab);
  e.backend->download(out, all.data());
  const auto logits_after = [&](int k) {
    return std::span<const float>(all).subspan(static_cast<size_t>(k) * n_vocab, n_vocab);
  };
  // drafts[k] is kept while it is what greedy decoding takes after drafts[k - 1].
  int kept = 1;
  while (kept < n && drafts[kept] == argmax(logits_after(kept - 1))) ++kept;
  const Status back = e.backend->rewind_sequence(s.seq, pos0 + kept);
  e.backend->settle_sequence(s.seq);
  if (!back.is_ok()) {
    s.reset();  // the state holds rows the transcript does not: start again from nothing
    return back;
  }
  s.tokens.insert(s.tokens.end(), drafts.begin(), drafts.begin() + kept);
  s.mtp_advance(pos0, kept);  // the kept rows' hidden states are still the pass's
  const std::span<const float> last = logits_after(kept - 1);
  s.logits.assign(last.begin(), last.end());
  return kept;
}

}  // namespace ds4
