// tools/quality/score.cpp: scoring and recording continuations (see score.h).
#include "tools/quality/score.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "ds4/chat.h"
#include "ds4/sampling.h"

namespace ds4::quality {
namespace {

// Each token's log-softmax in double: its logit less ds4::log_sum_exp of them all.
struct LogSoftmax {
  double lse;
  explicit LogSoftmax(std::span<const float> logits) : lse(log_sum_exp(logits)) {}
  double at(std::span<const float> logits, TokenId id) const {
    return static_cast<double>(logits[static_cast<size_t>(id)]) - lse;
  }
};

// A session that has read the case's prompt, its context sized for `steps` more tokens.
Result<std::unique_ptr<Session>> prompted_session(Engine& engine, const Tokenizer& tok,
                                                  const std::string& prompt_text, size_t steps,
                                                  const std::string& id) {
  DS4_ASSIGN_OR_RETURN(const std::vector<TokenId> prompt, prompt_tokens(tok, prompt_text));
  const int need = static_cast<int>(prompt.size() + steps) + 1;
  DS4_ASSIGN_OR_RETURN(
      auto s, engine.create_session(
                  {.n_ctx = std::min(need, engine.info().n_ctx_max), .prefill_chunk = 512}));
  DS4_TRY(s->append(prompt).status().with_context("case " + id));
  return s;
}

// KL(p || q) of two log-distributions over the same support, each renormalised over it.
double kl_on_support(const std::vector<double>& lp, const std::vector<double>& lq) {
  const auto norm = [](const std::vector<double>& l) {
    const double m = *std::max_element(l.begin(), l.end());
    double s = 0;
    for (const double v : l) s += std::exp(v - m);
    return m + std::log(s);
  };
  const double zp = norm(lp), zq = norm(lq);
  double kl = 0;
  for (size_t i = 0; i < lp.size(); ++i) {
    const double a = lp[i] - zp, b = lq[i] - zq;
    kl += std::exp(a) * (a - b);
  }
  return std::max(kl, 0.0);
}

}  // namespace

TokenIndex::TokenIndex(const Tokenizer& tok) {
  for (TokenId id = 0; id < tok.vocab_size(); ++id)
    ids_.emplace(std::string(tok.token_bytes(id)), id);
}

Result<TokenId> TokenIndex::find(const std::string& bytes) const {
  const auto it = ids_.find(bytes);
  if (it == ids_.end()) {
    return Status::invalid_argument("token bytes %s are no vocabulary entry",
                                    to_hex(bytes).c_str());
  }
  return it->second;
}

Result<std::vector<TokenId>> prompt_tokens(const Tokenizer& tok, const std::string& text) {
  const chat::Message m{.role = chat::Role::kUser, .content = text};
  DS4_ASSIGN_OR_RETURN(const std::string rendered,
                       chat::render(std::span(&m, 1), chat::RenderOptions{}));
  return tok.encode(rendered, SpecialTokens::kRecognize);
}

Result<CaseScore> score_case(Engine& engine, const Tokenizer& tok, const TokenIndex& index,
                             const VectorCase& c, const std::string& prompt_text) {
  // Every token resolved before the model runs.
  std::vector<TokenId> chosen;
  std::vector<std::vector<TokenId>> support(c.steps.size());
  for (size_t i = 0; i < c.steps.size(); ++i) {
    DS4_ASSIGN_OR_RETURN(const TokenId id, index.find(c.steps[i].selected));
    chosen.push_back(id);
    for (const auto& t : c.steps[i].top) {
      DS4_ASSIGN_OR_RETURN(const TokenId tid, index.find(t.first));
      support[i].push_back(tid);
    }
  }
  DS4_ASSIGN_OR_RETURN(auto s, prompted_session(engine, tok, prompt_text, chosen.size(), c.id));
  CaseScore out;
  out.id = c.id;
  for (size_t i = 0; i < chosen.size(); ++i) {
    const std::span<const float> logits = s->logits();
    const LogSoftmax ls(logits);
    out.log_likelihood += ls.at(logits, chosen[i]);
    out.top1 += argmax(logits) == chosen[i] ? 1 : 0;
    std::vector<double> lp, lq;
    for (size_t k = 0; k < support[i].size(); ++k) {
      lp.push_back(c.steps[i].top[k].second);
      lq.push_back(ls.at(logits, support[i][k]));
    }
    const double kl = kl_on_support(lp, lq);
    out.kl_sum += kl;
    out.kl_max = std::max(out.kl_max, kl);
    ++out.steps;
    if (i + 1 < chosen.size()) DS4_TRY(s->eval(chosen[i]).with_context("case " + c.id));
  }
  return out;
}

Result<VectorCase> record_case(Engine& engine, const Tokenizer& tok, const VectorCase& like,
                               const std::string& prompt_text, int steps, int top_n) {
  DS4_ASSIGN_OR_RETURN(
      auto s, prompted_session(engine, tok, prompt_text, static_cast<size_t>(steps), like.id));
  VectorCase c{.id = like.id, .ctx = like.ctx, .prompt_file = like.prompt_file, .steps = {}};
  for (int i = 0; i < steps; ++i) {
    const std::span<const float> logits = s->logits();
    const LogSoftmax ls(logits);
    // The order of ds4::top_logprobs (best first, lower id on ties); the values in double, as
    // score_case computes them, so that the recording model scores KL 0 exactly.
    const std::vector<TokenLogprob> top = top_logprobs(logits, top_n);
    if (top.empty()) return Status::internal("case %s: no finite logit", like.id.c_str());
    VectorStep st;
    st.selected = std::string(tok.token_bytes(top[0].id));
    for (const TokenLogprob& t : top) {
      st.top.emplace_back(std::string(tok.token_bytes(t.id)), ls.at(logits, t.id));
    }
    c.steps.push_back(std::move(st));
    if (i + 1 < steps) DS4_TRY(s->eval(top[0].id).with_context("case " + like.id));
  }
  return c;
}

}  // namespace ds4::quality
