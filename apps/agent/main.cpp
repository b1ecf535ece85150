// apps/agent/main.cpp: `ds4-agent` -- flags (each declared once, with its help), validation and
// wiring (features.md §5.1). Usage errors print one line and exit with status 2. The terminal UI
// when stdin and stdout are a terminal, else (or with --non-interactive) the plain mode.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "agent/system_prompt.h"
#include "agent_app.h"
#include "apps/common/dist_options.h"
#include "apps/common/mapping_guard.h"
#include "tui/screen.h"

namespace {

using ds4::agent_app::AgentOptions;
using ds4::agent_app::Approval;

constexpr int kUsageError = 2;
// features.md §5.1: the agent's context default, larger than the CLI's (tool results add up).
constexpr int kAgentDefaultCtx = 100000;

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "ds4-agent: %s (see ds4-agent --help)\n", msg.c_str());
  return kUsageError;
}

// The test hook's file: a JSON array of strings, one per assistant round.
std::string read_scripted(const std::string& path, std::vector<std::string>* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "cannot read --test-scripted-output file '" + path + "'";
  const auto j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return "--test-scripted-output: '" + path + "' is not a JSON array";
  for (const auto& item : j) {
    if (!item.is_string()) return "--test-scripted-output: every item must be a string";
    out->push_back(item.get<std::string>());
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  AgentOptions o;
  o.run.ctx = kAgentDefaultCtx;
  o.system = std::string(ds4::agent::kDefaultExtraSystem);
  std::string prompt, chdir_to, scripted_path;
  bool non_interactive = false, yolo = false, deny_unsafe = false;
  CLI::App app{
      "ds4-agent: a coding agent on DeepSeek V4 (docs/agent.md). It reads, writes and edits files "
      "in the working directory, searches, and runs shell commands; it asks before a shell "
      "command or a write outside the directory (--yolo: never asks). Sessions are saved as KV "
      "files (/save, /list, /switch; /help lists the commands). Without a terminal, or with "
      "--non-interactive: one turn with -p, else prompts read from stdin, and --yolo or "
      "--deny-unsafe must say what to do with what needs approval."};
  namespace app_opts = ds4::app;
  app_opts::RunFlags run_flags(app, o.run,
                               app_opts::kEngine | app_opts::kCtx | app_opts::kPrefillChunk |
                                   app_opts::kSampling | app_opts::kThink | app_opts::kMtp |
                                   app_opts::kSteering | app_opts::kPower);
  app_opts::DistOptions dist;
  app_opts::DistFlags dist_flags(app, dist, app_opts::kDistCoordinator);
  auto* p_opt =
      app.add_option("-p,--prompt", prompt,
                     "submit this prompt after startup (non-interactive: one turn, then exit)");
  app.add_flag("--non-interactive", non_interactive,
               "no terminal UI: model text on stdout, tools and markers on stderr");
  auto* yolo_opt =
      app.add_flag("--yolo", yolo, "run shell commands and writes outside the directory unasked");
  auto* deny_opt = app.add_flag("--deny-unsafe", deny_unsafe,
                                "refuse shell commands and writes outside the directory unasked");
  yolo_opt->excludes(deny_opt);
  app.add_option("--system", o.system,
                 "extra system text, appended as plain text (-sys; "
                 "empty: none)")
      ->capture_default_str();
  app.add_option("-n,--tokens", o.n_predict, "tokens per assistant round at most")
      ->check(CLI::Range(1, 1 << 30))
      ->capture_default_str();
  app.add_option("--trace", o.trace,
                 "append prompts, rounds, calls and results to FILE (JSON "
                 "lines)");
  app.add_option("--chdir", chdir_to,
                 "work in DIR (relative paths, the model's included, from "
                 "there)");
  app.add_option("--kv-dir", o.kv_dir,
                 "saved sessions and the system prompt checkpoint (default ~/.ds4/kvcache)");
  app.add_option("--test-save-pause-ms", o.test_save_pause_ms,
                 "tests only: a session save pauses this long halfway through its file")
      ->check(CLI::Range(0, 600000))
      ->group("");
  app.add_option("--test-scripted-output", scripted_path,
                 "tests only: a JSON array of texts, the i-th generation (assistant round or "
                 "compaction summary) emits the i-th text's tokens and EOS instead of sampling")
      ->group("");  // hidden from --help, like ds4-server's --test-forced-output
  try {
    app.parse(ds4::app::args_for_parse(argc, argv));
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what());
  }
  if (const std::string err = run_flags.finish(); !err.empty()) return usage_error(err);
  if (const std::string err = dist_flags.finish(); !err.empty()) return usage_error(err);
  // Plain line output when there is no terminal to draw on (features.md §5.8).
  const bool terminal = ::isatty(STDIN_FILENO) == 1 && ::isatty(STDOUT_FILENO) == 1 &&
                        ds4::tui::Screen::usable(STDIN_FILENO, STDOUT_FILENO);
  if (!non_interactive && !terminal) non_interactive = true;
  if (non_interactive && !yolo && !deny_unsafe) {
    return usage_error(
        "without a terminal nobody can be asked before shell commands: choose --yolo or "
        "--deny-unsafe");
  }
  o.approval = yolo ? Approval::kYolo : deny_unsafe ? Approval::kDenyUnsafe : Approval::kAsk;
  if (*p_opt) o.prompt = prompt;
  if (!chdir_to.empty() && ::chdir(chdir_to.c_str()) != 0) {
    return usage_error("cannot change to directory '" + chdir_to + "'");
  }
  if (!scripted_path.empty()) {
    if (const std::string err = read_scripted(scripted_path, &o.scripted); !err.empty()) {
      return usage_error(err);
    }
  }
  if (!std::filesystem::exists(o.run.model)) {
    return usage_error("model file '" + o.run.model +
                       "' not found: get one with scripts/download_model.sh q2-imatrix");
  }
  auto tok = ds4::Tokenizer::open(o.run.model);
  if (!tok.is_ok()) return usage_error(tok.status().message());
  if (o.run.think == ds4::chat::ThinkMode::kMax && o.run.ctx < ds4::chat::kThinkMaxMinContext) {
    std::fprintf(stderr, "ds4-agent: --think-max needs --ctx >= %lld; thinking at high effort\n",
                 static_cast<long long>(ds4::chat::kThinkMaxMinContext));
  }
  ds4::app::install_mapping_guard();
  auto engine = ds4::app::open_engine(ds4::app::engine_options(o.run), dist, o.run.ctx);
  if (!engine.is_ok()) return usage_error(engine.status().message());
  return non_interactive ? ds4::agent_app::run_noninteractive(**engine, *tok, o)
                         : ds4::agent_app::run_interactive(**engine, *tok, o);
}
