// src/engine/mtp.cpp: the MTP block's state in a session and greedy speculative decoding with it
// (model.md §8, issue 51). The block's row of position p pairs the main model's hidden state of p
// with the embedding of token p + 1 and predicts token p + 2, as DeepSeek's MTP module is trained
// (the hidden state of position i with the embedding of token i + 1). ds4 pairs the hidden state
// of p with token p instead, so that its first draft repeats the main model's prediction (model.md
// §8.2 notes it as unconfirmed); here the first draft is already a token beyond the greedy one.
// The rows run as the main model's passes complete them: a prefill chunk's rows in one batch, a
// verification's kept rows in one batch, so the block sees every position of the context.
#include "ds4/sampling.h"
#include "engine/session_impl.h"

namespace ds4 {

void Session::Impl::mtp_advance(int c0, int c) {
  if (!mtp.live || c <= 0) return;
  Engine::Impl& e = *engine;
  const model::MtpWeights& m = *e.mtp;
  model::Forward& f = *e.forward;
  const int64_t width = int64_t{e.shape.n_hc} * e.shape.n_embd;
  const int first = mtp.has_pending ? c0 - 1 : c0;  // the first position completed now
  const int n = c0 + c - 1 - first;
  const backend::Act in = e.mtp_in_view(n);
  const backend::Act pending = mtp.pending->view(1, width);
  if (mtp.has_pending) e.backend->copy(pending, backend::Act{in.data, 1, width});
  if (c > 1)
    f.mtp_normalise(m, f.hidden(0, c - 1), backend::Act{in.row(n - (c - 1)), c - 1, width});
  f.mtp_normalise(m, f.hidden(c - 1, 1), pending);
  mtp.has_pending = true;
  if (n == 0) return;
  std::vector<backend::RowTag> rows;
  for (int p = first; p < first + n; ++p) rows.push_back({mtp.seq, p, tokens[size_t(p) + 1]});
  f.run_mtp(m, rows, in, {}, {});
}

Result<std::vector<TokenId>> Session::Impl::mtp_draft(int n) {
  Engine::Impl& e = *engine;
  if (!mtp_ready()) {
    return Status::unavailable(
        "%s", e.mtp ? "the MTP block has not seen this session's context (a snapshot was loaded or "
                      "a batched step ran since it began)"
                    : "no MTP file is loaded");
  }
  if (n < 1 || n > 16) return Status::invalid_argument("%d drafts is outside [1, 16]", n);
  const model::MtpWeights& m = *e.mtp;
  model::Forward& f = *e.forward;
  const int64_t width = int64_t{e.shape.n_hc} * e.shape.n_embd;
  const int n_vocab = e.shape.n_vocab;
  // Drafts beyond the greedy token stay inside the context.
  n = std::min(n, options.n_ctx - 2 - static_cast<int>(tokens.size()));
  std::vector<TokenId> drafts;
  if (n <= 0) return drafts;
  const auto first = static_cast<int32_t>(tokens.size()) - 1;
  DS4_TRY(e.backend->mark_sequence(mtp.seq));
  const backend::Act in = e.mtp_in_view(1);
  e.backend->copy(mtp.pending->view(1, width), in);
  const backend::Act out = e.logits_view(1);
  std::vector<float> host(static_cast<size_t>(n_vocab));
  TokenId token = argmax(logits);
  const int want = 0;
  for (int k = 0; k < n; ++k) {
    const backend::RowTag row{mtp.seq, first + k, token};
    f.run_mtp(m, std::span(&row, 1), in, std::span(&want, 1), out);
    e.backend->download(out, host.data());
    token = argmax(host);
    drafts.push_back(token);
    // The next draft reads the block's own output state, as the recursion of model.md §8.3.
    if (k + 1 < n) f.mtp_normalise(m, f.hidden(0, 1), in);
  }
  // The drafts' rows are not the model's: the window goes back to the positions it had.
  const Status back = e.backend->rewind_sequence(mtp.seq, first);
  e.backend->settle_sequence(mtp.seq);
  if (!back.is_ok()) {
    mtp.live = false;
    return back;
  }
  return drafts;
}

Result<std::vector<TokenId>> Session::draft(int n) { return impl_->mtp_draft(n); }

bool Session::can_draft() const { return impl_->mtp_ready(); }

Result<int> Session::step_greedy(int max_drafts) {
  Impl& s = *impl_;
  DS4_TRY(s.whole_model());
  if (s.logits.empty()) return Status::unavailable("no logits yet: append tokens first");
  std::vector<TokenId> run{argmax(s.logits)};
  if (max_drafts > 0 && can_draft()) {
    DS4_ASSIGN_OR_RETURN(std::vector<TokenId> drafts, s.mtp_draft(std::min(max_drafts, 16)));
    run.insert(run.end(), drafts.begin(), drafts.end());
  }
  if (run.size() == 1) {
    DS4_TRY(eval(run[0]));
    return 1;
  }
  return verify_greedy(run);
}

}  // namespace ds4
