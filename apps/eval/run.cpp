// apps/eval/run.cpp: the cases one after another -- render, tokenize, prefill, decode with the
// think budget, grade, trace -- in plain mode, and the context sizing (features.md §7.2-7.4).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>

#include "decode/decoder.h"
#include "ds4/chat.h"
#include "eval/extract.h"
#include "eval/prompt.h"
#include "eval/trace.h"
#include "eval_app.h"
#include "gen/generation.h"

namespace ds4::evalapp {
namespace {

constexpr const char* kGrey = "\x1b[90m";
constexpr const char* kReset = "\x1b[0m";
constexpr int64_t kModelContext = 1 << 20;  // DeepSeek V4's 1,048,576 tokens

// The one flag the SIGINT handler sets (lock-free, async-signal-safe): the running case stops.
std::atomic<bool>& interrupted() {
  static std::atomic<bool> flag{false};
  return flag;
}

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = [](int) { interrupted().store(true); };
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
}

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

// Plain mode's stream: reasoning grey on a terminal, a newline where it ends.
class Stream {
 public:
  Stream() : color_(isatty(fileno(stdout)) != 0) {}
  void show(const std::vector<gen::Event>& events) {
    for (const gen::Event& e : events) {
      const bool reasoning = e.kind == gen::EventKind::kReasoning;
      if (!reasoning && e.kind != gen::EventKind::kText) continue;
      if (reasoning != reasoning_) {
        if (color_) std::fputs(reasoning ? kGrey : kReset, stdout);
        if (!reasoning) std::fputc('\n', stdout);
        reasoning_ = reasoning;
      }
      std::fwrite(e.text.data(), 1, e.text.size(), stdout);
    }
    std::fflush(stdout);
  }
  void end() {
    if (reasoning_ && color_) std::fputs(kReset, stdout);
    reasoning_ = false;
    std::fputc('\n', stdout);
  }

 private:
  bool color_;
  bool reasoning_ = false;
};

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
                        const EvalOptions& o) {
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
  if (ctx > kModelContext) {
    return Status::out_of_range(
        "the largest prompt and --tokens %d need a context of %lld tokens, over the model's %lld",
        o.tokens, static_cast<long long>(ctx), static_cast<long long>(kModelContext));
  }
  return static_cast<int>(ctx);
}

Result<std::vector<eval::CaseResult>> run_cases(Engine* engine, const Tokenizer* tok,
                                                const std::vector<eval::Question>& questions,
                                                const EvalOptions& o) {
  install_interrupt_handler();
  const int ctx = o.run.ctx;
  const chat::ThinkMode think =
      o.server ? o.run.think : chat::effective_think_mode(o.run.think, ctx);
  std::unique_ptr<Session> s;
  if (engine != nullptr) {
    DS4_ASSIGN_OR_RETURN(s, engine->create_session(app::session_options(o.run)));
  }
  std::FILE* trace = nullptr;
  if (!o.trace.empty()) {
    trace = std::fopen(o.trace.c_str(), "wb");
    if (trace == nullptr) return Status::io_error("cannot write the trace '%s'", o.trace.c_str());
    const std::string head = eval::write_trace_header(
        {{"started_unix", std::to_string(std::time(nullptr))},
         {"model", o.server ? "server " + o.server->host + ":" + std::to_string(o.server->port)
                            : o.run.model},
         {"model_shape", engine != nullptr ? engine->info().shape : "-"},
         {"backend", o.server ? "server" : o.run.backend},
         {"ctx", o.server ? "-" : std::to_string(ctx)},
         {"max_tokens", std::to_string(o.tokens)},
         {"questions", std::to_string(questions.size())},
         {"sampling", sampling_text(o.run.sampling)},
         {"think", chat::to_string(o.run.think)},
         {"budgets", "hard=" + std::to_string(o.hard_budget) + " soft=" +
                         std::to_string(o.soft_budget) + " rank=" + std::to_string(o.soft_rank)}});
    std::fwrite(head.data(), 1, head.size(), trace);
  }
  const TokenId think_end = tok != nullptr ? tok->special_ids().think_end : -1;
  Rng rng(o.run.sampling.seed);
  Stream stream;
  std::vector<eval::CaseResult> results;
  eval::TraceSummary summary;
  for (size_t i = 0; i < questions.size(); ++i) {
    const eval::Question& q = questions[i];
    eval::CaseResult r{
        .index = static_cast<int>(i + 1), .key = q.key(), .state = "PENDING", .correct = q.answer};
    if (interrupted().load()) {
      results.push_back(r);  // never run
      continue;
    }
    std::printf("[%zu/%zu] %s/%s %s\n", i + 1, questions.size(), q.source.c_str(), q.domain.c_str(),
                q.title.c_str());
    const auto t0 = std::chrono::steady_clock::now();
    std::string output;
    ThinkClose close;
    std::vector<TokenId> prompt;
    int limit = o.tokens;
    if (tok != nullptr) {
      DS4_ASSIGN_OR_RETURN(prompt, case_prompt(q, *tok, think, ctx));
      r.prompt_tokens = static_cast<int64_t>(prompt.size());
      limit = std::min<int64_t>(o.tokens, ctx - 1 - static_cast<int64_t>(prompt.size()));
    }
    if (o.server) {
      DS4_ASSIGN_OR_RETURN(ServerAnswer a,
                           ask_server(*o.server, eval::system_prompt(), eval::user_prompt(q),
                                      o.tokens, think, o.run.sampling));
      output = a.reasoning.empty() ? a.content : a.reasoning + "</think>" + a.content;
      std::vector<gen::Event> shown;
      if (!a.reasoning.empty())
        shown.push_back({.kind = gen::EventKind::kReasoning, .text = a.reasoning});
      shown.push_back({.kind = gen::EventKind::kText, .text = a.content});
      stream.show(shown);
      stream.end();
      r.prompt_tokens = a.prompt_tokens;
      r.generated_tokens = a.completion_tokens;
      close.kind = "server";
      const eval::Grade grade = eval::grade(q, output);
      r.given = grade.picked;
      r.state = grade.passed ? "PASSED" : "FAILED";
    } else if (limit <= 0) {
      r.state = "SKIPPED";
    } else {
      DS4_TRY(s->sync(prompt).status());
      const bool thinking = think != chat::ThinkMode::kNone;
      gen::OutputSpec spec{.thinking = thinking};
      // The hard close: </think> forced once only hard_budget tokens are left.
      if (thinking && limit > o.hard_budget) spec.reasoning_budget = limit - o.hard_budget;
      gen::Generation g(*tok, spec);
      bool open = thinking, soft = false;
      decode::Hooks hooks;
      hooks.replace = [&](std::span<const float> logits) -> std::optional<TokenId> {
        const int remaining = limit - g.generated();
        if (!open || remaining > o.soft_budget || think_end < 0) return std::nullopt;
        const int rank = rank_of(logits, think_end);
        if (rank >= o.soft_rank) return std::nullopt;
        soft = true;
        close.rank = rank;
        return think_end;
      };
      hooks.taken = [&](const gen::Generation::Taken& t, std::span<const gen::Event>) {
        if (open && t.id == think_end) {
          open = false;
          close.index = g.generated() - 1;
          close.remaining = limit - g.generated() + 1;
          close.kind = soft ? "soft"
                       : spec.reasoning_budget > 0 && g.generated() == spec.reasoning_budget + 1
                           ? "hard"
                           : "natural";
        }
        return true;
      };
      decode::Decoder d(*s, g, o.run.sampling, rng, limit, app::drafting(o.run), std::move(hooks));
      std::vector<TokenId> taken;
      std::vector<gen::Event> events;
      while (!d.done()) {
        if (interrupted().load()) break;
        events.clear();
        DS4_TRY(d.advance(&taken, &events));
        stream.show(events);
      }
      events.clear();
      g.finish(&events);
      stream.show(events);
      stream.end();
      output = g.raw();
      r.generated_tokens = d.taken();
      if (interrupted().load() && !d.done()) {
        r.state = "STOPPED";
      } else {
        const eval::Grade grade = eval::grade(q, output);
        r.given = grade.picked;
        r.state = grade.passed ? "PASSED" : "FAILED";
      }
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r.state == "PASSED" || r.state == "FAILED") {
      std::printf("%s got %s expected %s (%.1f s, %lld tokens)\n",
                  r.state == "PASSED" ? "PASSED" : "FAIL", r.given.c_str(), q.answer.c_str(), secs,
                  static_cast<long long>(r.generated_tokens));
      ++(r.state == "PASSED" ? summary.passed : summary.failed);
    } else {
      std::printf("%s\n", r.state.c_str());
    }
    ++summary.total;
    if (trace != nullptr) {
      eval::TraceCase c{.index = r.index,
                        .total = static_cast<int>(questions.size()),
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
                                  {"sampling", sampling_text(o.run.sampling)},
                                  {"think", chat::to_string(think)},
                                  {"think_close", close.text()},
                                  {"answer_kind", eval::to_string(q.kind)}},
                        .system_prompt = eval::system_prompt(),
                        .question_prompt = eval::user_prompt(q),
                        .model_output = output};
      const std::string text = eval::write_trace_case(c);
      std::fwrite(text.data(), 1, text.size(), trace);
      std::fflush(trace);
    }
    results.push_back(r);
  }
  if (trace != nullptr) {
    const std::string text = eval::write_trace_summary(summary);
    std::fwrite(text.data(), 1, text.size(), trace);
    std::fclose(trace);
  }
  return results;
}

}  // namespace ds4::evalapp
