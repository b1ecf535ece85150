// apps/eval/main.cpp: `ds4-eval` -- flags, the model-free modes (--self-test-extractors,
// --regrade-trace), the question selection, the run and its report, the baseline drift gate
// (features.md §7, issue 52). Usage errors print one line and exit with code 2.
#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/common/mapping_guard.h"
#include "base/read_file.h"
#include "eval/baseline.h"
#include "eval/datasets.h"
#include "eval/regrade.h"
#include "eval/selftest.h"
#include "eval/trace.h"
#include "eval_app.h"

namespace {

constexpr int kUsageError = 2;
constexpr std::string_view kEmbeddedQuestions =
#include "embedded_questions.inc"
    ;

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "ds4-eval: %s (see ds4-eval --help)\n", msg.c_str());
  return kUsageError;
}

// --case-sequence "3,1,2": 1-based positions in the question set, each once.
ds4::Result<std::vector<size_t>> parse_sequence(const std::string& text, size_t n) {
  std::vector<size_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 1 || static_cast<size_t>(v) > n) {
      return ds4::Status::invalid_argument("--case-sequence: '%s' is not a case number in 1..%zu",
                                           item.c_str(), n);
    }
    if (std::find(out.begin(), out.end(), size_t(v - 1)) != out.end()) {
      return ds4::Status::invalid_argument("--case-sequence: case %lld is named twice", v);
    }
    out.push_back(static_cast<size_t>(v - 1));
  }
  if (out.empty()) return ds4::Status::invalid_argument("--case-sequence is empty");
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  ds4::evalapp::EvalOptions o;
  o.run.sampling = {.temperature = 0.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.05f, .seed = 0};
  std::string questions_file, sequence, regrade_trace, baseline, write_baseline, server;
  std::string questions_format = "ds4";
  int n_questions = 0;
  bool self_test = false, plain = false;
  int pause_ms = 350;
  CLI::App app{"ds4-eval: capability regression on DeepSeek V4 (docs/eval.md)"};
  namespace app_opts = ds4::app;
  app_opts::RunFlags run_flags(app, o.run,
                               app_opts::kEngine | app_opts::kCtx | app_opts::kPrefillChunk |
                                   app_opts::kSampling | app_opts::kThink | app_opts::kMtp |
                                   app_opts::kPower,
                               "context size (default: the largest prompt plus --tokens)");
  app.add_option("-n,--tokens", o.tokens, "tokens generated per case at most")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--questions-file", questions_file,
                 "questions as JSONL (docs/eval.md; default: the built-in set)");
  app.add_option("--questions-format", questions_format,
                 "the file's format: ds4 (JSONL, docs/eval.md), gpqa (its CSV), supergpqa or "
                 "aime (their JSONL)")
      ->capture_default_str();
  app.add_option("--questions", n_questions, "run the first N questions")
      ->check(CLI::PositiveNumber);
  app.add_option("--case-sequence", sequence, "run exactly these cases, in this order (1-based)");
  app.add_option("--trace", o.trace, "write every case's prompts and output to FILE");
  app.add_option("--regrade-trace", regrade_trace,
                 "grade a trace's outputs again with the current extractors (no model)");
  app.add_flag("--self-test-extractors", self_test, "check the answer extractors and exit");
  app.add_option("--write-baseline", write_baseline,
                 "record each case's status, answer and token count in FILE (the drift gate)");
  app.add_option("--baseline", baseline,
                 "compare the run with FILE: every case that drifted is named, exit 1 if any");
  app.add_option("--hard-limit-reply-budget", o.hard_budget,
                 "force </think> once this many tokens are left")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--soft-limit-reply-budget", o.soft_budget,
                 "with this many tokens left, take </think> when it ranks high")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--soft-limit-think-close-rank", o.soft_rank,
                 "the rank </think> needs for the soft close")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_flag("--plain", plain, "sequential output instead of the split screen");
  app.add_option("--pause-ms", pause_ms, "split screen: pause after each result")
      ->check(CLI::Range(0, 60000))
      ->capture_default_str();
  app.add_option("--server", server,
                 "ask a running ds4-server (http://HOST:PORT; DS4_API_KEY from the environment) "
                 "instead of loading the model");
  try {
    app.parse(app_opts::args_for_parse(argc, argv));
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what());
  }
  if (const std::string err = run_flags.finish(); !err.empty()) return usage_error(err);
  o.ctx_given = app.count("--ctx") > 0 || app.count("-c") > 0;

  if (self_test) {
    const ds4::Status st = ds4::eval::run_extractor_self_tests();
    if (!st.is_ok()) {
      std::fprintf(stderr, "ds4-eval: answer extractor self-test failed: %s\n",
                   st.message().c_str());
      return 1;
    }
    std::printf("answer extractor self-tests passed\n");
    return 0;
  }
  auto format = ds4::eval::dataset_format(questions_format);
  if (!format.is_ok()) return usage_error(format.status().message());
  if (questions_file.empty() && *format != ds4::eval::DatasetFormat::kDs4) {
    return usage_error("--questions-format " + questions_format + " needs --questions-file");
  }
  auto questions = questions_file.empty() ? ds4::eval::parse_questions(kEmbeddedQuestions)
                                          : ds4::eval::load_dataset(questions_file, *format);
  if (!questions.is_ok()) return usage_error(questions.status().message());
  if (!regrade_trace.empty()) {
    auto text = ds4::base::read_file(regrade_trace);
    if (!text.is_ok()) return usage_error(text.status().message());
    const ds4::eval::RegradeResult r = ds4::eval::regrade(ds4::eval::read_trace(*text), *questions);
    std::fputs(ds4::eval::format_regrade(r).c_str(), stdout);
    return ds4::eval::regrade_exit_code(r);
  }
  if (n_questions > 0 && !sequence.empty()) {
    return usage_error("choose one of --questions and --case-sequence");
  }
  if (static_cast<size_t>(n_questions) > questions->size()) {
    return usage_error("--questions " + std::to_string(n_questions) + ": the set has " +
                       std::to_string(questions->size()));
  }
  if (n_questions > 0) questions->resize(static_cast<size_t>(n_questions));
  if (!sequence.empty()) {
    auto order = parse_sequence(sequence, questions->size());
    if (!order.is_ok()) return usage_error(order.status().message());
    std::vector<ds4::eval::Question> picked;
    for (const size_t i : *order) picked.push_back((*questions)[i]);
    *questions = std::move(picked);
  }
  if (o.run.think != ds4::chat::ThinkMode::kNone && o.hard_budget >= o.tokens) {
    return usage_error("--hard-limit-reply-budget " + std::to_string(o.hard_budget) +
                       " must be below --tokens " + std::to_string(o.tokens) +
                       " (the think block's hard close)");
  }
  std::vector<ds4::eval::BaselineEntry> base;
  if (!baseline.empty()) {
    auto text = ds4::base::read_file(baseline);
    if (!text.is_ok()) return usage_error(text.status().message());
    auto parsed = ds4::eval::parse_baseline(*text);
    if (!parsed.is_ok()) return usage_error(baseline + ": " + parsed.status().message());
    base = std::move(*parsed);
  }
  const auto report = [&](const std::vector<ds4::eval::CaseResult>& results, double secs) {
    std::fputs(ds4::eval::format_report(results, secs).c_str(), stdout);
    const std::vector<ds4::eval::BaselineEntry> now = ds4::eval::baseline_from_results(results);
    if (!write_baseline.empty()) {
      std::ofstream f(write_baseline, std::ios::binary | std::ios::trunc);
      f << ds4::eval::write_baseline(now);
      if (!f.flush()) {
        std::fprintf(stderr, "ds4-eval: cannot write '%s'\n", write_baseline.c_str());
        return 1;
      }
    }
    if (!baseline.empty()) {
      const ds4::eval::DriftReport drift = ds4::eval::compare_baseline(base, now);
      std::fputs(ds4::eval::format_drift(drift).c_str(), stdout);
      return drift.passed ? 0 : 1;
    }
    return ds4::eval::report_exit_code(results);
  };
  // The split screen on a terminal unless --plain; plain lines otherwise.
  const auto make_view = [&] {
    std::unique_ptr<ds4::evalapp::View> v;
    if (!plain) v = ds4::evalapp::make_split_view(pause_ms);
    if (!v) v = ds4::evalapp::make_plain_view();
    return v;
  };
  const auto t0 = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  if (!server.empty()) {
    if (!ds4::evalapp::server_mode_available()) {
      return usage_error("this build has no HTTP client (cpp-httplib): no --server");
    }
    auto target = ds4::evalapp::parse_server_url(server);
    if (!target.is_ok()) return usage_error(target.status().message());
    o.server = *target;
    auto results = ds4::evalapp::run_cases(nullptr, nullptr, *questions, o, *make_view());
    if (!results.is_ok()) {
      std::fprintf(stderr, "ds4-eval: %s\n", results.status().message().c_str());
      return 1;
    }
    return report(*results, elapsed());
  }
  if (!std::filesystem::exists(o.run.model)) {
    return usage_error("model file '" + o.run.model + "' not found");
  }
  auto tok = ds4::Tokenizer::open(o.run.model);
  if (!tok.is_ok()) return usage_error(tok.status().message());
  ds4::app::install_mapping_guard();
  auto engine = ds4::Engine::open(ds4::app::engine_options(o.run));
  if (!engine.is_ok()) return usage_error(engine.status().message());
  if (!o.ctx_given) {
    auto ctx = ds4::evalapp::context_for(*questions, *tok, o, (*engine)->info().n_ctx_max);
    if (!ctx.is_ok()) return usage_error(ctx.status().message());
    o.run.ctx = *ctx;
  }
  auto results = ds4::evalapp::run_cases(&**engine, &*tok, *questions, o, *make_view());
  if (!results.is_ok()) {
    std::fprintf(stderr, "ds4-eval: %s\n", results.status().message().c_str());
    return 1;
  }
  return report(*results, elapsed());
}
