// apps/cli/main.cpp: `ds4` -- flags (each declared once, with its help), validation, wiring of
// the one-shot run, the dumps and the REPL. Usage errors print one line and exit with code 2.
#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "apps/common/dist_options.h"
#include "apps/common/mapping_guard.h"
#include "cli.h"

namespace {

using ds4::cli::CliOptions;

constexpr int kUsageError = 2;

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "ds4: %s (see ds4 --help)\n", msg.c_str());
  return kUsageError;
}

}  // namespace

int main(int argc, char** argv) {
  CliOptions o;
  std::string prompt, prompt_file;
  CLI::App app{"ds4: chat with DeepSeek V4 (one-shot with -p, interactive otherwise)"};
  namespace app_opts = ds4::app;
  app_opts::RunFlags run_flags(app, o.run,
                               app_opts::kEngine | app_opts::kCtx | app_opts::kPrefillChunk |
                                   app_opts::kSampling | app_opts::kChatTemplate |
                                   app_opts::kThink | app_opts::kMtp | app_opts::kSteering |
                                   app_opts::kPower);
  auto* p_opt = app.add_option("-p,--prompt", prompt, "prompt text: generate once and exit");
  auto* pf_opt = app.add_option("--prompt-file", prompt_file, "read the prompt from a file");
  p_opt->excludes(pf_opt);
  app.add_option("--system", o.system, "system prompt (-sys; empty: none)")->capture_default_str();
  app.add_option("-n,--tokens", o.n_predict, "tokens to generate at most")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  app.add_flag("--dump-tokens", o.dump_tokens, "print the prompt's tokens as written and exit");
  app.add_option("--dump-logprobs", o.dump_logprobs,
                 "write a greedy continuation with top "
                 "log-probabilities as JSON and exit");
  app.add_option("--logprobs-top-k", o.logprobs_top_k, "alternatives per step in --dump-logprobs")
      ->check(CLI::Range(1, 128))
      ->capture_default_str();
  app.add_option("--dump-logits", o.dump_logits,
                 "write the logits after the prompt as JSON and exit");
  app.add_option("--trace", o.trace, "append one JSON line per turn to FILE");
  ds4::app::DistOptions dist;
  ds4::app::DistFlags dist_flags(app, dist, app_opts::kDistCoordinator | app_opts::kDistWorker);
  try {
    app.parse(ds4::app::args_for_parse(argc, argv));
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what());
  }
  if (const auto code = ds4::app::run_keygen(dist, "ds4")) return *code;
  if (const std::string err = run_flags.finish(); !err.empty()) return usage_error(err);
  if (const std::string err = dist_flags.finish(); !err.empty()) return usage_error(err);
  if (dist.role == "worker") {
    if (*p_opt || *pf_opt || o.dump_tokens) return usage_error("a worker takes no prompt");
    if (!std::filesystem::exists(o.run.model)) {
      return usage_error("model file '" + o.run.model + "' not found");
    }
    return ds4::app::run_worker(dist, o.run, "ds4");
  }
  if (*p_opt) o.prompt = prompt;
  if (*pf_opt) {
    std::ifstream f(prompt_file, std::ios::binary);
    if (!f) return usage_error("cannot read prompt file '" + prompt_file + "'");
    o.prompt = std::string((std::istreambuf_iterator<char>(f)), {});
  }
  const bool dumping = !o.dump_logprobs.empty() || !o.dump_logits.empty();
  if ((o.dump_tokens || dumping) && !o.prompt) return usage_error("the dump options need a prompt");
  if (!std::filesystem::exists(o.run.model)) {
    return usage_error("model file '" + o.run.model +
                       "' not found: get one with scripts/download_model.sh q2-imatrix, or run "
                       "`make run` for the built-in test model");
  }
  auto tok = ds4::Tokenizer::open(o.run.model);
  if (!tok.is_ok()) return usage_error(tok.status().message());
  if (o.dump_tokens) return ds4::cli::dump_tokens(*tok, *o.prompt);
  if (o.run.think == ds4::chat::ThinkMode::kMax && o.run.ctx < ds4::chat::kThinkMaxMinContext) {
    std::fprintf(stderr, "ds4: --think-max needs --ctx >= %lld; thinking at high effort\n",
                 static_cast<long long>(ds4::chat::kThinkMaxMinContext));
  }

  ds4::app::install_mapping_guard();
  auto engine = ds4::app::open_engine(ds4::app::engine_options(o.run), dist, o.run.ctx);
  if (engine.status().code() == ds4::StatusCode::kUnavailable) {  // no route of workers
    std::fprintf(stderr, "ds4: %s\n", engine.status().message().c_str());
    return 1;
  }
  if (!engine.is_ok()) return usage_error(engine.status().message());
  ds4::Engine& e = **engine;
  if (!o.prompt) return ds4::cli::run_repl(e, *tok, o);

  auto session = e.create_session(ds4::app::session_options(o.run));
  if (!session.is_ok()) return usage_error(session.status().message());
  auto prompt_tokens = ds4::cli::oneshot_prompt(*tok, o);
  if (!prompt_tokens.is_ok()) return usage_error(prompt_tokens.status().message());
  if (prompt_tokens->size() >= static_cast<size_t>(o.run.ctx)) {
    return usage_error("the prompt has " + std::to_string(prompt_tokens->size()) +
                       " tokens; --ctx " + std::to_string(o.run.ctx) + " cannot hold it");
  }
  // The logits first: the prompt is then evaluated once for both dumps (the continuation extends
  // the session, and logits taken after it would evaluate the prompt again from position 0).
  ds4::Status st;
  if (!o.dump_logits.empty()) st = ds4::cli::dump_logits(e, **session, *tok, *prompt_tokens, o);
  if (st.is_ok() && !o.dump_logprobs.empty()) {
    st = ds4::cli::dump_logprobs(e, **session, *tok, *prompt_tokens, o);
  }
  if (dumping) {
    if (!st.is_ok()) std::fprintf(stderr, "ds4: %s\n", st.message().c_str());
    return st.is_ok() ? 0 : 1;
  }
  ds4::cli::install_interrupt_handler();
  ds4::Rng rng(o.run.sampling.seed);
  ds4::cli::TextSink sink(
      ds4::chat::effective_think_mode(o.run.think, o.run.ctx) != ds4::chat::ThinkMode::kNone,
      stdout);
  auto r = ds4::cli::generate(**session, *tok, *prompt_tokens, o.n_predict, o.run.sampling,
                              ds4::app::drafting(o.run), rng, sink);
  if (!r.is_ok()) {
    std::fprintf(stderr, "ds4: %s\n", r.status().message().c_str());
    return 1;
  }
  ds4::cli::print_timing(*r);
  ds4::cli::trace_turn(o.trace, 0, *r);
  return 0;
}
