// apps/cli/repl.cpp: the interactive chat (features.md §4.7). The conversation is kept as one
// token transcript -- BOS [+ Think-Max prefix] + system, then per turn the user fragment and the
// model's own tokens + EOS -- and the session is synced to it, so each turn evaluates only the new
// text. Ctrl+C stops a generation (a turn with no token is rolled back); Ctrl+D exits.
#if defined(DS4_HAVE_LIBEDIT)
#include <editline/readline.h>
#endif

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli.h"

namespace ds4::cli {
namespace {

#if defined(DS4_HAVE_LIBEDIT)
constexpr int kHistoryLines = 512;
#endif

const char* kHelp =
    "Commands:\n"
    "  /help            this list\n"
    "  /think           think before answering (default)\n"
    "  /think-max       maximum reasoning effort (needs a context of at least 393216)\n"
    "  /nothink         answer directly\n"
    "  /ctx N           new context size (the conversation is kept and re-evaluated)\n"
    "  /power [N]       show or set the percent of full speed (1-100)\n"
    "  /read FILE       send the contents of FILE as the next message\n"
    "  /save FILE       save the session (DSV4 snapshot)\n"
    "  /load FILE       load a saved session\n"
    "  /quit, /exit     leave (Ctrl+D too); Ctrl+C stops a reply\n";

class Conversation {
 public:
  Conversation(Engine& e, const Tokenizer& tok, CliOptions& o) : e_(e), tok_(tok), o_(o) {}

  Status open_session() {
    DS4_ASSIGN_OR_RETURN(session_, e_.create_session(app::session_options(o_.run)));
    std::fprintf(stderr, "ds4: context %d tokens, KV state %.1f MiB\n", o_.run.ctx,
                 static_cast<double>(session_->state_bytes()) / (1 << 20));
    return Status::ok();
  }

  // Re-renders the header for the current mode and swaps it into the transcript.
  Status set_mode(chat::ThinkMode m) {
    o_.run.think = m;
    DS4_ASSIGN_OR_RETURN(std::string h, render({}, false));
    std::vector<TokenId> header = tok_.encode(h, SpecialTokens::kRecognize);
    std::vector<TokenId> rest(transcript_.begin() + header_len_, transcript_.end());
    transcript_ = header;
    transcript_.insert(transcript_.end(), rest.begin(), rest.end());
    header_len_ = header.size();
    return Status::ok();
  }

  Status turn(const std::string& user, Rng& rng, int n_turn) {
    DS4_ASSIGN_OR_RETURN(std::string head, render({}, false));
    DS4_ASSIGN_OR_RETURN(std::string full, render(user, true));
    if (!std::string_view(full).starts_with(head)) {
      return Status::internal("the rendered turn does not extend the rendered header");
    }
    const size_t before = transcript_.size();
    tok_.encode_append(std::string_view(full).substr(head.size()), SpecialTokens::kRecognize,
                       &transcript_);
    TextSink sink(mode() != chat::ThinkMode::kNone, stdout);
    auto r = generate(*session_, tok_, transcript_, o_.n_predict, o_.run.sampling,
                      app::drafting(o_.run), rng, sink);
    if (!r.is_ok()) {
      transcript_.resize(before);
      return r.status();
    }
    if (r->stop == StopReason::kInterrupt && r->generated == 0) {
      transcript_.resize(before);  // nothing was said: the turn never happened
      std::fprintf(stderr, "ds4: interrupted\n");
      return Status::ok();
    }
    transcript_.insert(transcript_.end(), r->tokens.begin(), r->tokens.end());
    if (r->stop != StopReason::kEos) transcript_.push_back(tok_.special_ids().eos);
    print_timing(*r);
    trace_turn(o_.trace, n_turn, *r);
    return Status::ok();
  }

  Status save(const std::string& path) {
    DS4_TRY(session_->sync(transcript_).status());
    return session_->save_file(path);
  }

  Status load(const std::string& path) {
    DS4_TRY(session_->load_file(path));
    transcript_.assign(session_->tokens().begin(), session_->tokens().end());
    header_len_ = 0;
    return Status::ok();
  }

  Status start() {
    DS4_TRY(open_session());
    return set_mode(o_.run.think);
  }

 private:
  chat::ThinkMode mode() const { return chat::effective_think_mode(o_.run.think, o_.run.ctx); }

  Result<std::string> render(const std::string& user, bool with_user) {
    std::vector<chat::Message> msgs;
    if (!o_.system.empty()) msgs.push_back({.role = chat::Role::kSystem, .content = o_.system});
    if (with_user) msgs.push_back({.role = chat::Role::kUser, .content = user});
    chat::RenderOptions ro;
    ro.think = mode();
    ro.context_size = o_.run.ctx;
    ro.add_generation_prompt = with_user;
    return chat::render(msgs, ro, o_.run.chat_template);
  }

  Engine& e_;
  const Tokenizer& tok_;
  CliOptions& o_;
  std::unique_ptr<Session> session_;
  std::vector<TokenId> transcript_;
  size_t header_len_ = 0;
};

// Line input: libedit (editing, persistent history) when the build has it, else plain stdin.
class LineInput {
 public:
  explicit LineInput(std::string history) : history_(std::move(history)) {
#if defined(DS4_HAVE_LIBEDIT)
    stifle_history(kHistoryLines);
    read_history(history_.c_str());
#endif
  }
  ~LineInput() {
#if defined(DS4_HAVE_LIBEDIT)
    write_history(history_.c_str());
#endif
  }
  // False at end of input; interrupted is set when Ctrl+C cut the read short.
  bool read(std::string* line, bool* interrupted) {
    *interrupted = false;
#if defined(DS4_HAVE_LIBEDIT)
    char* raw = readline("ds4> ");
    if (raw == nullptr) {
      *interrupted = interrupt_flag().exchange(false);
      return *interrupted;
    }
    line->assign(raw);
    std::free(raw);
    if (!line->empty()) add_history(line->c_str());
    return true;
#else
    std::fputs("ds4> ", stdout);
    std::fflush(stdout);
    if (!std::getline(std::cin, *line)) {
      *interrupted = interrupt_flag().exchange(false);
      std::cin.clear();
      return *interrupted;
    }
    return true;
#endif
  }

 private:
  std::string history_;
};

std::string history_path() {
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.ds4_history";
}

void report(const Status& st) {
  if (!st.is_ok()) std::fprintf(stderr, "ds4: %s\n", st.message().c_str());
}

}  // namespace

int run_repl(Engine& e, const Tokenizer& tok, CliOptions o) {
  Conversation conv(e, tok, o);
  if (Status st = conv.start(); !st.is_ok()) {
    report(st);
    return 1;
  }
  std::fputs(kHelp, stdout);
  LineInput input(history_path());
  install_interrupt_handler();
  Rng rng(o.run.sampling.seed);
  int n_turn = 0;
  for (;;) {
    interrupt_flag().store(false);
    std::string line;
    bool interrupted = false;
    if (!input.read(&line, &interrupted)) {
      std::fputc('\n', stdout);  // Ctrl+D
      break;
    }
    if (interrupted) {  // Ctrl+C at the prompt: a fresh prompt
      std::fputc('\n', stdout);
      continue;
    }
    if (line.empty()) continue;
    std::istringstream words(line);
    std::string cmd, arg;
    words >> cmd;
    std::getline(words >> std::ws, arg);
    if (cmd == "/quit" || cmd == "/exit") break;
    if (cmd == "/help") {
      std::fputs(kHelp, stdout);
    } else if (cmd == "/think" || cmd == "/nothink") {
      report(conv.set_mode(cmd == "/think" ? chat::ThinkMode::kHigh : chat::ThinkMode::kNone));
      std::printf("mode: %s\n", cmd == "/think" ? "thinking" : "no thinking");
    } else if (cmd == "/think-max") {
      if (o.run.ctx < chat::kThinkMaxMinContext) {
        std::printf("mode: high (ctx below %lld; use /ctx %lld first)\n",
                    static_cast<long long>(chat::kThinkMaxMinContext),
                    static_cast<long long>(chat::kThinkMaxMinContext));
      } else {
        std::printf("mode: think-max\n");
      }
      report(conv.set_mode(chat::ThinkMode::kMax));
    } else if (cmd == "/ctx") {
      char* end = nullptr;
      const long n = std::strtol(arg.c_str(), &end, 10);
      if (arg.empty() || *end != '\0' || n < 2 || n > e.info().n_ctx_max) {
        std::printf("usage: /ctx N with 2 <= N <= %d\n", e.info().n_ctx_max);
        continue;
      }
      o.run.ctx = static_cast<int>(n);
      report(conv.open_session());
      report(conv.set_mode(o.run.think));
    } else if (cmd == "/power") {
      std::printf("%s\n", app::power_command(e, arg).c_str());
    } else if (cmd == "/read") {
      std::ifstream f(arg, std::ios::binary);
      if (!f) {
        std::printf("cannot read '%s'\n", arg.c_str());
        continue;
      }
      std::string text((std::istreambuf_iterator<char>(f)), {});
      report(conv.turn(text, rng, n_turn++));
    } else if (cmd == "/save" || cmd == "/load") {
      if (arg.empty()) {
        std::printf("usage: %s FILE\n", cmd.c_str());
        continue;
      }
      const Status st = cmd == "/save" ? conv.save(arg) : conv.load(arg);
      report(st);
      if (st.is_ok()) std::printf("%s %s\n", cmd == "/save" ? "saved" : "loaded", arg.c_str());
    } else if (!cmd.empty() && cmd[0] == '/') {
      std::printf("unknown command %s; /help lists the commands\n", cmd.c_str());
    } else {
      report(conv.turn(line, rng, n_turn++));
    }
  }
  return 0;
}

}  // namespace ds4::cli
