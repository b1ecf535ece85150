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
namespace {

// How far the logit of `best` (the row's argmax) leads the next best finite logit.
float lead(std::span<const float> logits, TokenId best) {
  float second = kNegInf;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (static_cast<TokenId>(i) != best && logits[i] > second) second = logits[i];
  }
  return logits[size_t(best)] - second;
}

}  // namespace

int Session::Impl::mtp_rows(int c) const {
  if (mtp.seq < 0 || c <= 0) return 0;
  return mtp.live && mtp.has_pending ? c : c - 1;
}

void Session::Impl::mtp_collect(int c0, int c, int r0, backend::Act in,
                                std::vector<backend::RowTag>* tags) {
  if (mtp.seq < 0 || c <= 0) return;
  Engine::Impl& e = *engine;
  if (!mtp.live) {
    // Start the window again at c0: an empty window whose next row is position c0.
    std::vector<backend::LayerState> empty(1);
    empty[0].n_tokens = c0;
    if (!e.backend->import_sequence(mtp.seq, empty).is_ok()) return;
    mtp.live = true;
    mtp.has_pending = false;
    mtp.fresh_from = c0;
  }
  const model::MtpWeights& m = *e.mtp;
  model::Forward& f = *e.forward;
  const int64_t width = int64_t{e.shape.n_hc} * e.shape.n_embd;
  const int at = static_cast<int>(tags->size());
  const int n = mtp_rows(c);
  const int first = c0 + c - 1 - n;  // the first position completed now
  const backend::Act pending = mtp.pending->view(1, width);
  if (mtp.has_pending) e.backend->copy(pending, backend::Act{in.row(at), 1, width});
  if (c > 1) {
    f.mtp_normalise(m, f.hidden(r0, c - 1), backend::Act{in.row(at + n - (c - 1)), c - 1, width});
  }
  f.mtp_normalise(m, f.hidden(r0 + c - 1, 1), pending);
  mtp.has_pending = true;
  for (int p = first; p < first + n; ++p) tags->push_back({mtp.seq, p, tokens[size_t(p) + 1]});
}

void Session::Impl::mtp_advance(int c0, int c) {
  if (mtp.seq < 0 || c <= 0) return;
  const int n = mtp_rows(c);
  Engine::Impl& e = *engine;
  std::vector<backend::RowTag> tags;
  const backend::Act in = e.mtp_in_view(std::max(n, 1));
  mtp_collect(c0, c, 0, in, &tags);
  if (!tags.empty()) {
    e.forward->run_mtp(*e.mtp, tags, backend::Act{in.data, int64_t(tags.size()), in.cols}, {}, {});
  }
}

bool Session::Impl::mtp_ready() const {
  if (!mtp.live || !mtp.has_pending || logits.empty()) return false;
  // The draft's row attends to the n_swa - 1 positions before the pending one.
  const int pending = static_cast<int>(tokens.size()) - 1;
  return mtp.fresh_from == 0 || pending - mtp.fresh_from >= engine->shape.n_swa - 1;
}

Result<std::vector<TokenId>> Session::Impl::mtp_draft(TokenId next, int n, float margin) {
  Engine::Impl& e = *engine;
  if (!mtp_ready()) {
    return Status::unavailable(
        "%s", e.mtp ? "the MTP block has not seen the positions a draft reads (a snapshot was "
                      "loaded fewer than n_swa - 1 positions ago)"
                    : "no MTP file is loaded");
  }
  if (n < 1 || n > 16) return Status::invalid_argument("%d drafts is outside [1, 16]", n);
  DS4_TRY(check_tokens(std::span(&next, 1), tokens.size()));
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
  TokenId token = next;
  const int want = 0;
  const auto unit = e.power.start();
  for (int k = 0; k < n; ++k) {
    const backend::RowTag row{mtp.seq, first + k, token};
    f.run_mtp(m, std::span(&row, 1), in, std::span(&want, 1), out);
    e.backend->download(out, host.data());
    token = argmax(host);
    if (margin > 0.0f && lead(host, token) < margin) break;  // too unsure to be worth verifying
    drafts.push_back(token);
    // The next draft reads the block's own output state, as the recursion of model.md §8.3.
    if (k + 1 < n) f.mtp_normalise(m, f.hidden(0, 1), in);
  }
  // The drafts' rows are not the model's: the window goes back to the positions it had.
  const Status back = e.backend->rewind_sequence(mtp.seq, first);
  e.backend->settle_sequence(mtp.seq);
  e.pace(unit);
  if (!back.is_ok()) {
    mtp.live = false;
    return back;
  }
  return drafts;
}

Result<std::vector<TokenId>> Session::draft(TokenId next, int n, float margin) {
  return impl_->mtp_draft(next, n, margin);
}

bool Session::can_draft() const { return impl_->mtp_ready(); }

Result<int> Session::step_greedy(int max_drafts, float margin) {
  Impl& s = *impl_;
  DS4_TRY(s.whole_model());
  if (s.logits.empty()) return Status::unavailable("no logits yet: append tokens first");
  std::vector<TokenId> run{argmax(s.logits.host())};
  if (max_drafts > 0 && can_draft()) {
    DS4_ASSIGN_OR_RETURN(std::vector<TokenId> drafts,
                         s.mtp_draft(run[0], std::min(max_drafts, 16), margin));
    run.insert(run.end(), drafts.begin(), drafts.end());
  }
  if (run.size() == 1) {
    DS4_TRY(eval(run[0]));
    return 1;
  }
  return verify_greedy(run);
}

}  // namespace ds4
