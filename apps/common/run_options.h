// apps/common/run_options.h: the options every program that runs the model shares, declared once
// with one CLI11 binding (features.md §4.2, §1.16, §6.2): model, backend, threads, context size,
// prefill chunk, sampling defaults, chat template and think mode. ds4, ds4-server, ds4-bench and
// ds4-loadgen take the ones that concern them; the tools to come take them from here too.
// Owns: the options' names, defaults, ranges and help text; folding the think flags and the seed
// after parsing; the engine and session options they imply.
// Does not own: each program's own flags, or what a program does with the options.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "decode/decoder.h"
#include "ds4/chat.h"
#include "ds4/engine.h"
#include "ds4/sampling.h"
#include "ds4/session.h"

namespace ds4::app {

struct RunOptions {
  std::string model = "ds4flash.gguf";
  std::string backend = "cpu";  // "cpu" or "cuda"
  int threads = 0;              // CPU threads (0: all)
  int ctx = 32768;              // context size in tokens (per session)
  int prefill_chunk = SessionOptions{}.prefill_chunk;
  SamplingParams sampling{
      .temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.05f, .seed = 0};
  chat::Template chat_template = chat::Template::kOfficial;
  chat::ThinkMode think = chat::ThinkMode::kHigh;
  std::string mtp;            // the MTP draft file (empty: none)
  int mtp_draft = 2;          // tokens the MTP block drafts per step
  float mtp_margin = 3.0f;    // drafting stops before a draft led by fewer logits (0: never)
  std::string steering_file;  // directional steering directions (features.md §8; empty: none)
  Steering steering;          // its scales (finish(): ffn 1 when a file comes without a scale)
  int power = 100;            // --power: the device's busy share in percent (1-100)
};

// The options a program takes (a bit set).
enum RunOption : unsigned {
  kModel = 1u << 0,         // -m, --model
  kBackend = 1u << 1,       // --backend
  kThreads = 1u << 2,       // -t, --threads
  kCtx = 1u << 3,           // -c, --ctx
  kPrefillChunk = 1u << 4,  // --prefill-chunk
  kSampling = 1u << 5,      // --temp, --top-k, --top-p, --min-p, --seed
  kChatTemplate = 1u << 6,  // --chat-template
  kThink = 1u << 7,         // --think, --nothink, --think-max
  kMtp = 1u << 8,           // --mtp, --mtp-draft, --mtp-margin
  kSteering = 1u << 9,      // --dir-steering-file, --dir-steering-ffn, --dir-steering-attn
  kPower = 1u << 10,        // --power
  kEngine = kModel | kBackend | kThreads,
};

// Declares the chosen options on `app`, with `o`'s values as their defaults (a program sets its
// own defaults in `o` first). `ctx_help` says what --ctx means to the program.
class RunFlags {
 public:
  RunFlags(CLI::App& app, RunOptions& o, unsigned which,
           const std::string& ctx_help = "context size in tokens");
  RunFlags(const RunFlags&) = delete;
  RunFlags& operator=(const RunFlags&) = delete;

  // After app.parse(): folds the think flags into RunOptions::think, draws the seed from the
  // clock when --seed was not given, and gives a steering file without a scale flag the FFN
  // scale 1. Returns a usage error's text, or "" when all is well.
  std::string finish();

 private:
  RunOptions& o_;
  unsigned which_;
  bool think_ = false, nothink_ = false, think_max_ = false;
  double seed_ = -1;
  std::string chat_template_;
  CLI::Option* steer_ffn_ = nullptr;
  CLI::Option* steer_attn_ = nullptr;
};

// The engine and session options the run options imply.
EngineOptions engine_options(const RunOptions& o);
// The command line for CLI11::App::parse (which takes it reversed), with "-sys" read as
// --system: CLI11 has no single-dash long options, and ds4 and ds4-agent accept that short form.
std::vector<std::string> args_for_parse(int argc, char** argv);
SessionOptions session_options(const RunOptions& o);
// `/power [N]` of the ds4 REPL and ds4-agent: sets the engine's power when N is given (1-100)
// and returns the line to show ("power: 70%", or the usage when N is not a number in range).
std::string power_command(Engine& engine, const std::string& arg);
// The decode loop's drafting the MTP options imply (none without --mtp).
decode::Drafting drafting(const RunOptions& o);

}  // namespace ds4::app
