// apps/cli/main.cpp: `ds4` -- flags (each declared once, with its help), validation, wiring of
// the one-shot run, the dumps and the REPL. Usage errors print one line and exit with code 2.
#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "cli.h"

namespace {

using ds4::cli::CliOptions;

constexpr int kUsageError = 2;

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "ds4: %s (see ds4 --help)\n", msg.c_str());
  return kUsageError;
}

// CLI11 has no single-dash long options; ds4 accepts "-sys" as the short form of --system.
std::vector<std::string> normalise_args(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) {  // CLI11 takes the arguments reversed
    args.push_back(std::string(argv[i]) == "-sys" ? "--system" : argv[i]);
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  CliOptions o;
  std::string prompt, prompt_file;
  bool think = false, nothink = false, think_max = false;
  double seed = -1;
  CLI::App app{"ds4: chat with DeepSeek V4 (one-shot with -p, interactive otherwise)"};
  app.add_option("-m,--model", o.model, "model GGUF")->capture_default_str();
  auto* p_opt = app.add_option("-p,--prompt", prompt, "prompt text: generate once and exit");
  auto* pf_opt = app.add_option("--prompt-file", prompt_file, "read the prompt from a file");
  p_opt->excludes(pf_opt);
  app.add_option("--system", o.system, "system prompt (-sys; empty: none)")->capture_default_str();
  app.add_option("-n,--tokens", o.n_predict, "tokens to generate at most")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  app.add_option("-c,--ctx", o.ctx, "context size in tokens")
      ->check(CLI::Range(2, 1048576))
      ->capture_default_str();
  app.add_option("--temp", o.sampling.temperature, "temperature (0: greedy)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  app.add_option("--top-k", o.sampling.top_k, "keep the K most likely tokens (0: all)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  app.add_option("--top-p", o.sampling.top_p, "nucleus sampling mass")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--min-p", o.sampling.min_p, "drop tokens below this fraction of the best")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--seed", seed, "random seed (default: from the clock)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--think", think, "think before answering (default)");
  app.add_flag("--nothink", nothink, "answer without thinking");
  app.add_flag("--think-max", think_max, "maximum effort (needs --ctx >= 393216)");
  app.add_option("--backend", o.backend, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("-t,--threads", o.threads, "CPU threads (0: all)")->check(CLI::Range(0, 4096));
  app.add_option("--prefill-chunk", o.prefill_chunk, "tokens per prefill batch")
      ->check(CLI::Range(1, 65536))
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
  try {
    app.parse(normalise_args(argc, argv));
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what());
  }
  if (think + nothink + think_max > 1)
    return usage_error("choose one of --think, --nothink, --think-max");
  if (nothink) o.think = ds4::chat::ThinkMode::kNone;
  if (think_max) o.think = ds4::chat::ThinkMode::kMax;
  o.sampling.seed =
      seed >= 0
          ? static_cast<uint64_t>(seed)
          : static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  if (*p_opt) o.prompt = prompt;
  if (*pf_opt) {
    std::ifstream f(prompt_file, std::ios::binary);
    if (!f) return usage_error("cannot read prompt file '" + prompt_file + "'");
    o.prompt = std::string((std::istreambuf_iterator<char>(f)), {});
  }
  const bool dumping = !o.dump_logprobs.empty() || !o.dump_logits.empty();
  if ((o.dump_tokens || dumping) && !o.prompt) return usage_error("the dump options need a prompt");
  if (!std::filesystem::exists(o.model)) {
    return usage_error("model file '" + o.model +
                       "' not found: get one with scripts/download_model.sh q2-imatrix, or run "
                       "`make run` for the built-in test model");
  }
  auto tok = ds4::Tokenizer::open(o.model);
  if (!tok.is_ok()) return usage_error(tok.status().message());
  if (o.dump_tokens) return ds4::cli::dump_tokens(*tok, *o.prompt);
  if (o.think == ds4::chat::ThinkMode::kMax && o.ctx < ds4::chat::kThinkMaxMinContext) {
    std::fprintf(stderr, "ds4: --think-max needs --ctx >= %lld; thinking at high effort\n",
                 static_cast<long long>(ds4::chat::kThinkMaxMinContext));
  }

  ds4::EngineOptions eo;
  eo.model_path = o.model;
  eo.backend = o.backend == "cuda" ? ds4::BackendKind::kCuda : ds4::BackendKind::kCpu;
  eo.threads = o.threads;
  auto engine = ds4::Engine::open(eo);
  if (!engine.is_ok()) return usage_error(engine.status().message());
  ds4::Engine& e = **engine;
  if (!o.prompt) return ds4::cli::run_repl(e, *tok, o);

  auto session = e.create_session({.n_ctx = o.ctx, .prefill_chunk = o.prefill_chunk});
  if (!session.is_ok()) return usage_error(session.status().message());
  auto prompt_tokens = ds4::cli::oneshot_prompt(*tok, o);
  if (!prompt_tokens.is_ok()) return usage_error(prompt_tokens.status().message());
  if (prompt_tokens->size() >= static_cast<size_t>(o.ctx)) {
    return usage_error("the prompt has " + std::to_string(prompt_tokens->size()) +
                       " tokens; --ctx " + std::to_string(o.ctx) + " cannot hold it");
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
  ds4::Rng rng(o.sampling.seed);
  ds4::cli::TextSink sink(
      ds4::chat::effective_think_mode(o.think, o.ctx) != ds4::chat::ThinkMode::kNone, stdout);
  auto r = ds4::cli::generate(**session, *tok, *prompt_tokens, o.n_predict, o.sampling, rng, sink);
  if (!r.is_ok()) {
    std::fprintf(stderr, "ds4: %s\n", r.status().message().c_str());
    return 1;
  }
  ds4::cli::print_timing(*r);
  ds4::cli::trace_turn(o.trace, 0, *r);
  return 0;
}
