// apps/cli/generate.cpp: prompt building, streamed generation, timing and trace lines.
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "cli.h"
#include "gen/generation.h"

namespace ds4::cli {
namespace {

constexpr const char* kGrey = "\x1b[90m";
constexpr const char* kReset = "\x1b[0m";
constexpr std::string_view kBos = "<｜begin▁of▁sentence｜>";

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Result<std::vector<TokenId>> oneshot_prompt(const Tokenizer& tok, const CliOptions& o) {
  const std::string& text = *o.prompt;
  if (std::string_view(text).starts_with(kBos)) return tok.encode(text, SpecialTokens::kRecognize);
  std::vector<chat::Message> msgs;
  if (!o.system.empty()) msgs.push_back({.role = chat::Role::kSystem, .content = o.system});
  msgs.push_back({.role = chat::Role::kUser, .content = text});
  chat::RenderOptions ro;
  ro.think = chat::effective_think_mode(o.run.think, o.run.ctx);
  ro.context_size = o.run.ctx;
  DS4_ASSIGN_OR_RETURN(std::string rendered, chat::render(msgs, ro, o.run.chat_template));
  return tok.encode(rendered, SpecialTokens::kRecognize);
}

TextSink::TextSink(bool thinking, FILE* out)
    : thinking_(thinking), out_(out), color_(isatty(fileno(out)) != 0) {}

void TextSink::show(const std::vector<gen::Event>& events) {
  for (const gen::Event& e : events) {
    if (e.kind == gen::EventKind::kReasoning) {
      if (!in_reasoning_ && color_) std::fputs(kGrey, out_);
      in_reasoning_ = true;
      std::fwrite(e.text.data(), 1, e.text.size(), out_);
    } else if (e.kind == gen::EventKind::kText) {
      if (in_reasoning_) {
        if (color_) std::fputs(kReset, out_);
        std::fputc('\n', out_);  // a newline always follows the end of thinking
        in_reasoning_ = false;
      }
      std::fwrite(e.text.data(), 1, e.text.size(), out_);
    }
  }
  std::fflush(out_);
}

void TextSink::finish() {
  if (in_reasoning_ && color_) std::fputs(kReset, out_);
  in_reasoning_ = false;
  std::fputc('\n', out_);
  std::fflush(out_);
}

const char* to_string(StopReason r) {
  switch (r) {
    case StopReason::kEos: return "eos";
    case StopReason::kLength: return "length";
    case StopReason::kInterrupt: return "interrupt";
  }
  return "?";
}

Result<TurnStats> generate(Session& s, const Tokenizer& tok, std::span<const TokenId> prompt,
                           int max_tokens, const SamplingParams& sampling,
                           const decode::Drafting& drafting, Rng& rng, TextSink& sink) {
  TurnStats t;
  t.prompt_tokens = static_cast<int>(prompt.size());
  auto t0 = std::chrono::steady_clock::now();
  DS4_ASSIGN_OR_RETURN(EvalStats st, s.sync(prompt));
  t.prefill_seconds = seconds_since(t0);
  t.evaluated = st.evaluated;
  // Leave one slot so the turn can still be closed with an EOS in a chat transcript.
  const int room = s.n_ctx() - s.n_tokens() - 2;
  const int limit = std::max(0, std::min(max_tokens, room));
  t0 = std::chrono::steady_clock::now();
  t.stop = StopReason::kLength;
  // The server's generation core: the CLI parses no tool calls and has no stop strings, so only
  // EOS ends the output before the limit.
  gen::Generation g(tok, gen::OutputSpec{.thinking = sink.thinking()});
  decode::Decoder d(s, g, sampling, rng, limit, drafting);
  std::vector<gen::Event> events;
  while (!d.done()) {
    if (interrupt_flag().exchange(false)) {
      t.stop = StopReason::kInterrupt;
      break;
    }
    events.clear();
    DS4_TRY(d.advance(&t.tokens, &events));
    sink.show(events);
  }
  if (d.end()) t.stop = StopReason::kEos;
  t.gen_seconds = seconds_since(t0);
  t.generated = static_cast<int>(t.tokens.size());
  t.acceptance = d.acceptance();
  events.clear();
  g.finish(&events);
  sink.show(events);
  sink.finish();
  t.text = g.raw();
  return t;
}

void print_timing(const TurnStats& t) {
  const double pf = t.prefill_seconds > 0 ? t.evaluated / t.prefill_seconds : 0.0;
  const double gen = t.gen_seconds > 0 ? t.generated / t.gen_seconds : 0.0;
  std::fprintf(stderr,
               "ds4: prompt %d tokens (%d evaluated), prefill %.2f t/s; generated %d tokens, "
               "%.2f t/s (stop: %s)\n",
               t.prompt_tokens, t.evaluated, pf, t.generated, gen, to_string(t.stop));
  if (t.acceptance.steps > 0) {
    std::fprintf(stderr, "ds4: mtp: %d of %d drafts kept in %d verification steps\n",
                 t.acceptance.accepted, t.acceptance.drafted, t.acceptance.steps);
  }
}

void trace_turn(const std::string& path, int turn, const TurnStats& t) {
  if (path.empty()) return;
  std::ofstream f(path, std::ios::app);
  f << "{\"turn\":" << turn << ",\"prompt_tokens\":" << t.prompt_tokens
    << ",\"evaluated\":" << t.evaluated << ",\"generated\":" << t.generated
    << ",\"prefill_s\":" << t.prefill_seconds << ",\"gen_s\":" << t.gen_seconds << ",\"stop\":\""
    << to_string(t.stop) << "\",\"mtp_steps\":" << t.acceptance.steps
    << ",\"mtp_drafted\":" << t.acceptance.drafted << ",\"mtp_accepted\":" << t.acceptance.accepted
    << ",\"tokens\":[";
  for (size_t i = 0; i < t.tokens.size(); ++i) f << (i ? "," : "") << t.tokens[i];
  f << "],\"text\":" << json_bytes_string(t.text) << "}\n";
}

}  // namespace ds4::cli
