// apps/eval/run.cpp: the cases in order (or as the user switches them) -- render, tokenize,
// prefill, decode with the think budget, or ask the server; grade, trace, show through the view --
// and the context sizing (features.md §7.2-7.4).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <deque>
#include <fstream>
#include <optional>

#include "apps/common/interrupt.h"
#include "decode/decoder.h"
#include "ds4/chat.h"
#include "eval/extract.h"
#include "eval/prompt.h"
#include "eval/trace.h"
#include "eval_app.h"
#include "gen/generation.h"

namespace ds4::evalapp {
namespace {

Result<std::vector<TokenId>> case_prompt(const eval::Question& q, const Tokenizer& tok,
                                         chat::ThinkMode think, int64_t ctx) {
  const std::vector<chat::Message> msgs{
      {.role = chat::Role::kSystem, .content = eval::system_prompt()},
      {.role = chat::Role::kUser, .content = eval::user_prompt(q)}};
  chat::RenderOptions ro;
  ro.think = think;
  ro.context_size = ctx;
  DS4_ASSIGN_OR_RETURN(std::string text, chat::render(msgs, ro));
  return tok.encode(text, SpecialTokens::kRecognize);
}

// How many logits lead `id`'s (0: it is the top one).
int rank_of(std::span<const float> logits, TokenId id) {
  int rank = 0;
  for (const float v : logits) rank += v > logits[size_t(id)];
  return rank;
}

std::string now_utc() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string sampling_text(const SamplingParams& p) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "temp=%g top_k=%d top_p=%g min_p=%g seed=%llu", p.temperature,
                p.top_k, p.top_p, p.min_p, static_cast<unsigned long long>(p.seed));
  return buf;
}

// How the think block closed: natural, soft (taken within the rank), hard (forced), or none.
struct ThinkClose {
  std::string kind = "none";
  int index = -1;      // the token's index in the output
  int remaining = -1;  // tokens the case could still generate then
  int rank = -1;       // soft: its rank in the distribution
  std::string text() const {
    return kind + " index=" + std::to_string(index) + " remaining=" + std::to_string(remaining) +
           " rank=" + std::to_string(rank);
  }
};

}  // namespace

Result<int> context_for(const std::vector<eval::Question>& questions, const Tokenizer& tok,
                        const EvalOptions& o, int max_ctx) {
  // The think mode depends on the context (Think Max needs a large one), the context on the
  // largest prompt: a few rounds settle it.
  int64_t ctx = o.run.think == chat::ThinkMode::kMax ? chat::kThinkMaxMinContext : 4096;
  for (int round = 0; round < 3; ++round) {
    const chat::ThinkMode think = chat::effective_think_mode(o.run.think, ctx);
    size_t largest = 0;
    for (const eval::Question& q : questions) {
      DS4_ASSIGN_OR_RETURN(std::vector<TokenId> p, case_prompt(q, tok, think, ctx));
      largest = std::max(largest, p.size());
    }
    int64_t want = static_cast<int64_t>(largest) + o.tokens + 1;
    if (o.run.think == chat::ThinkMode::kMax) want = std::max(want, chat::kThinkMaxMinContext);
    if (want == ctx) break;
    ctx = want;
  }
  if (ctx > max_ctx) {
    return Status::out_of_range(
        "the largest prompt and --tokens %d need a context of %lld tokens, over the model's %d",
        o.tokens, static_cast<long long>(ctx), max_ctx);
  }
  return static_cast<int>(ctx);
}

namespace {

// One run's state: the session, the generator shared by the cases, the trace, the results.
class Runner {
 public:
  Runner(Engine* engine, const Tokenizer* tok, const std::vector<eval::Question>& questions,
         const EvalOptions& o, View& view)
      : engine_(engine),
        tok_(tok),
        questions_(questions),
        o_(o),
        view_(view),
        think_(o.server ? o.run.think : chat::effective_think_mode(o.run.think, o.run.ctx)),
        think_end_(tok != nullptr ? tok->special_ids().think_end : -1),
        rng_(o.run.sampling.seed) {
    for (size_t i = 0; i < questions.size(); ++i) {
      results_.push_back({.index = static_cast<int>(i + 1),
                          .key = questions[i].key(),
                          .state = "PENDING",
                          .correct = questions[i].answer});
    }
  }
  ~Runner() {
    if (trace_ != nullptr) std::fclose(trace_);
  }

  Result<std::vector<eval::CaseResult>> run() {
    if (engine_ != nullptr) {
      DS4_ASSIGN_OR_RETURN(session_, engine_->create_session(app::session_options(o_.run)));
    }
    DS4_TRY(open_trace());
    view_.begin(questions_, results_);
    std::deque<size_t> order;
    for (size_t i = 0; i < questions_.size(); ++i) order.push_back(i);
    while (!order.empty() && !quit_) {
      const size_t i = order.front();
      order.pop_front();
      std::optional<size_t> next;
      DS4_TRY(run_case(i, &next));
      if (next) {  // the user picked case *next: it runs now, the switched one after it
        std::erase(order, *next);
        order.push_front(i);
        order.push_front(*next);
      }
    }
    view_.end();
    if (trace_ != nullptr) {
      const std::string text = eval::write_trace_summary(summary_);
      std::fwrite(text.data(), 1, text.size(), trace_);
    }
    return results_;
  }

 private:
  Status open_trace() {
    if (o_.trace.empty()) return Status::ok();
    trace_ = std::fopen(o_.trace.c_str(), "wb");
    if (trace_ == nullptr) return Status::io_error("cannot write the trace '%s'", o_.trace.c_str());
    const std::string head = eval::write_trace_header(
        {{"started_unix", std::to_string(std::time(nullptr))},
         {"model", o_.server ? "server " + o_.server->host + ":" + std::to_string(o_.server->port)
                             : o_.run.model},
         {"model_shape", engine_ != nullptr ? engine_->info().shape : "-"},
         {"backend", o_.server ? "server" : o_.run.backend},
         {"ctx", o_.server ? "-" : std::to_string(o_.run.ctx)},
         {"max_tokens", std::to_string(o_.tokens)},
         {"questions", std::to_string(questions_.size())},
         {"sampling", sampling_text(o_.run.sampling)},
         {"think", chat::to_string(o_.run.think)},
         {"budgets", "hard=" + std::to_string(o_.hard_budget) +
                         " soft=" + std::to_string(o_.soft_budget) +
                         " rank=" + std::to_string(o_.soft_rank)}});
    std::fwrite(head.data(), 1, head.size(), trace_);
    return Status::ok();
  }

  // Between tokens: SIGINT or the view's quit ends the run, a switch ends the case.
  bool keep_going(std::optional<size_t>* next) {
    size_t to = 0;
    const View::Action a = app::interrupt_flag().load() ? View::Action::kQuit : view_.poll(&to);
    if (a == View::Action::kQuit) quit_ = true;
    if (a == View::Action::kSwitch) *next = to;
    return a == View::Action::kNone;
  }

  // The server's answer to case q.
  Status ask(const eval::Question& q, eval::CaseResult& r, std::string* output, ThinkClose* close) {
    DS4_ASSIGN_OR_RETURN(ServerAnswer a,
                         ask_server(*o_.server, eval::system_prompt(), eval::user_prompt(q),
                                    o_.tokens, think_, o_.run.sampling));
    *output = a.reasoning.empty() ? a.content : a.reasoning + "</think>" + a.content;
    std::vector<gen::Event> shown;
    if (!a.reasoning.empty()) {
      shown.push_back({.kind = gen::EventKind::kReasoning, .text = a.reasoning});
    }
    shown.push_back({.kind = gen::EventKind::kText, .text = a.content});
    view_.output(shown, a.completion_tokens);
    r.prompt_tokens = a.prompt_tokens;
    r.generated_tokens = a.completion_tokens;
    close->kind = "server";
    return Status::ok();
  }

  // Case q in-process; false in *done when the user stopped or switched it.
  Status decode(const eval::Question& q, eval::CaseResult& r, std::string* output,
                ThinkClose* close, std::optional<size_t>* next, bool* done) {
    const size_t i = static_cast<size_t>(r.index - 1);
    DS4_ASSIGN_OR_RETURN(std::vector<TokenId> prompt, case_prompt(q, *tok_, think_, o_.run.ctx));
    r.prompt_tokens = static_cast<int64_t>(prompt.size());
    const int limit = static_cast<int>(
        std::min<int64_t>(o_.tokens, o_.run.ctx - 1 - static_cast<int64_t>(prompt.size())));
    *done = true;
    if (limit <= 0) {
      r.state = "SKIPPED";
      return Status::ok();
    }
    DS4_TRY(session_->sync(prompt).status());
    view_.case_begin(i, "RUNNING");
    const bool thinking = think_ != chat::ThinkMode::kNone;
    gen::OutputSpec spec{.thinking = thinking};
    // The hard close: </think> forced once only hard_budget tokens are left.
    if (thinking && limit > o_.hard_budget) spec.reasoning_budget = limit - o_.hard_budget;
    gen::Generation g(*tok_, spec);
    bool open = thinking, soft = false;
    decode::Hooks hooks;
    hooks.replace = [&](std::span<const float> logits) -> std::optional<TokenId> {
      const int remaining = limit - g.generated();
      if (!open || remaining > o_.soft_budget || think_end_ < 0) return std::nullopt;
      const int rank = rank_of(logits, think_end_);
      if (rank >= o_.soft_rank) return std::nullopt;
      soft = true;
      close->rank = rank;
      return think_end_;
    };
    hooks.taken = [&](const gen::Generation::Taken& t, std::span<const gen::Event>) {
      if (open && t.id == think_end_) {
        open = false;
        close->index = g.generated() - 1;
        close->remaining = limit - g.generated() + 1;
        const bool hard = spec.reasoning_budget > 0 && g.generated() == spec.reasoning_budget + 1;
        close->kind = soft ? "soft" : hard ? "hard" : "natural";
      }
      return true;
    };
    decode::Decoder d(*session_, g, o_.run.sampling, rng_, limit, app::drafting(o_.run),
                      std::move(hooks));
    std::vector<TokenId> taken;
    std::vector<gen::Event> events;
    while (!d.done() && keep_going(next)) {
      events.clear();
      DS4_TRY(d.advance(&taken, &events));
      view_.output(events, d.taken());
    }
    *done = d.done();
    events.clear();
    g.finish(&events);
    view_.output(events, d.taken());
    *output = g.raw();
    r.generated_tokens = d.taken();
    return Status::ok();
  }

  Status run_case(size_t i, std::optional<size_t>* next) {
    const eval::Question& q = questions_[i];
    eval::CaseResult& r = results_[i];
    const auto t0 = std::chrono::steady_clock::now();
    std::string output;
    ThinkClose close;
    bool done = true;
    view_.case_begin(i, o_.server ? "RUNNING" : "PREFILL");
    if (o_.server) {
      DS4_TRY(ask(q, r, &output, &close));
    } else {
      DS4_TRY(decode(q, r, &output, &close, next, &done));
    }
    if (r.state != "SKIPPED") {
      if (done) {
        const eval::Grade grade = eval::grade(q, output);
        r.given = grade.picked;
        r.state = grade.passed ? "PASSED" : "FAILED";
      } else {
        r.state = *next ? "SWITCHED" : "STOPPED";
      }
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r.state == "PASSED") ++summary_.passed;
    if (r.state == "FAILED") ++summary_.failed;
    if (r.state != "SWITCHED") ++summary_.total;
    view_.case_end(i, secs);
    write_trace(q, r, secs, close, output);
    if (r.state == "SWITCHED")
      r = {.index = r.index, .key = r.key, .state = "PENDING", .correct = r.correct};
    return Status::ok();
  }

  void write_trace(const eval::Question& q, const eval::CaseResult& r, double secs,
                   const ThinkClose& close, const std::string& output) {
    if (trace_ == nullptr) return;
    eval::TraceCase c{.index = r.index,
                      .total = static_cast<int>(questions_.size()),
                      .source = q.source,
                      .id = q.id,
                      .domain = q.domain,
                      .title = q.title,
                      .status = r.state,
                      .picked = r.given,
                      .expected = q.answer,
                      .prompt_tokens = r.prompt_tokens,
                      .generated_tokens = r.generated_tokens,
                      .elapsed_ms = static_cast<int64_t>(secs * 1000),
                      .extra = {{"timestamp", now_utc()},
                                {"sampling", sampling_text(o_.run.sampling)},
                                {"think", chat::to_string(think_)},
                                {"think_close", close.text()},
                                {"answer_kind", eval::to_string(q.kind)}},
                      .system_prompt = eval::system_prompt(),
                      .question_prompt = eval::user_prompt(q),
                      .model_output = output};
    const std::string text = eval::write_trace_case(c);
    std::fwrite(text.data(), 1, text.size(), trace_);
    std::fflush(trace_);
  }

  Engine* engine_;
  const Tokenizer* tok_;
  const std::vector<eval::Question>& questions_;
  const EvalOptions& o_;
  View& view_;
  chat::ThinkMode think_;
  TokenId think_end_;
  Rng rng_;
  std::unique_ptr<Session> session_;
  std::FILE* trace_ = nullptr;
  std::vector<eval::CaseResult> results_;
  eval::TraceSummary summary_;
  bool quit_ = false;
};

}  // namespace

Result<std::vector<eval::CaseResult>> run_cases(Engine* engine, const Tokenizer* tok,
                                                const std::vector<eval::Question>& questions,
                                                const EvalOptions& o, View& view) {
  app::install_interrupt_handler();
  Runner runner(engine, tok, questions, o, view);
  return runner.run();
}

}  // namespace ds4::evalapp
