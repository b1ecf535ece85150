// apps/common/run_options.cpp: the shared options' declarations and what they imply.
#include "apps/common/run_options.h"

#include <chrono>
#include <cstdlib>

namespace ds4::app {

RunFlags::RunFlags(CLI::App& app, RunOptions& o, unsigned which, const std::string& ctx_help)
    : o_(o), which_(which), chat_template_(chat::to_string(o.chat_template)) {
  if (which & kModel) app.add_option("-m,--model", o.model, "model GGUF")->capture_default_str();
  if (which & kBackend) {
    app.add_option("--backend", o.backend, "cpu or cuda")
        ->check(CLI::IsMember({"cpu", "cuda"}))
        ->capture_default_str();
  }
  if (which & kThreads) {
    app.add_option("-t,--threads", o.threads, "CPU threads (0: all)")
        ->check(CLI::Range(0, 4096))
        ->capture_default_str();
  }
  if (which & kCtx) {
    app.add_option("-c,--ctx", o.ctx, ctx_help)
        ->check(CLI::Range(2, 1048576))
        ->capture_default_str();
  }
  if (which & kPrefillChunk) {
    app.add_option("--prefill-chunk", o.prefill_chunk, "prompt tokens evaluated per batch")
        ->check(CLI::Range(1, 65536))
        ->capture_default_str();
  }
  if (which & kSampling) {
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
    app.add_option("--seed", seed_, "random seed (default: from the clock)")
        ->check(CLI::NonNegativeNumber);
  }
  if (which & kMtp) {
    app.add_option("--mtp", o.mtp,
                   "MTP draft GGUF: decoding drafts the next tokens with it and verifies them in "
                   "one batch (greedy: the same tokens; sampled: the same distribution; faster "
                   "when the drafts are right)")
        ->check(CLI::ExistingFile);
    app.add_option("--mtp-draft", o.mtp_draft, "tokens drafted per step with --mtp")
        ->check(CLI::Range(1, 4))
        ->capture_default_str();
    app.add_option("--mtp-margin", o.mtp_margin,
                   "with --mtp, stop drafting before a draft whose logit leads the MTP block's "
                   "second choice by less than this (0: draft --mtp-draft tokens every step)")
        ->check(CLI::Range(0.0, 100.0))
        ->capture_default_str();
  }
  if (which & kSteering) {
    app.add_option("--dir-steering-file", o.steering_file,
                   "directional steering: one float32 direction per layer (ds4-steer build)")
        ->check(CLI::ExistingFile);
    steer_ffn_ = app.add_option("--dir-steering-ffn", o.steering.ffn,
                                "remove this times the direction from each FFN output (negative: "
                                "amplify; default 1 with a file and no scale given)")
                     ->check(CLI::Range(-Steering::kMaxScale, Steering::kMaxScale));
    steer_attn_ = app.add_option("--dir-steering-attn", o.steering.attn,
                                 "the same on each attention output (default 0)")
                      ->check(CLI::Range(-Steering::kMaxScale, Steering::kMaxScale));
  }
  if (which & kPower) {
    app.add_option("--power", o.power,
                   "percent of full speed, 1-100: sleep between units of work so the device is "
                   "busy this share of the time (the output is the same)")
        ->check(CLI::Range(1, 100))
        ->capture_default_str();
  }
  if (which & kChatTemplate) {
    app.add_option("--chat-template", chat_template_,
                   "prompt format: official (DeepSeek's encoder) or ds4 (the ds4 engine's server, "
                   "byte for byte: to share its disk KV cache files or its prompts)")
        ->check(CLI::Validator(
            [](std::string& name) {
              auto t = chat::template_from_string(name);
              return t.is_ok() ? std::string() : t.status().message();
            },
            "{official,ds4}"))
        ->capture_default_str();
  }
  if (which & kThink) {
    const bool high = o.think != chat::ThinkMode::kNone;
    app.add_flag("--think", think_,
                 high ? "think before answering (default)"
                      : "think before answering (default: no thinking)");
    app.add_flag("--nothink", nothink_, "answer without thinking");
    app.add_flag("--think-max", think_max_, "maximum effort (needs --ctx >= 393216)");
  }
}

std::string RunFlags::finish() {
  if (think_ + nothink_ + think_max_ > 1) return "choose one of --think, --nothink, --think-max";
  if (think_) o_.think = chat::ThinkMode::kHigh;
  if (nothink_) o_.think = chat::ThinkMode::kNone;
  if (think_max_) o_.think = chat::ThinkMode::kMax;
  if (which_ & kSampling) {
    o_.sampling.seed =
        seed_ >= 0
            ? static_cast<uint64_t>(seed_)
            : static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  }
  if (which_ & kChatTemplate) o_.chat_template = *chat::template_from_string(chat_template_);
  if (which_ & kSteering) {
    const bool scaled = steer_ffn_->count() > 0 || steer_attn_->count() > 0;
    if (o_.steering_file.empty() && o_.steering.active()) {
      return "--dir-steering-ffn and --dir-steering-attn need --dir-steering-file";
    }
    if (!o_.steering_file.empty() && !scaled) o_.steering.ffn = 1.0f;
  }
  return {};
}

EngineOptions engine_options(const RunOptions& o) {
  EngineOptions eo;
  eo.model_path = o.model;
  eo.backend = o.backend == "cuda" ? BackendKind::kCuda : BackendKind::kCpu;
  eo.threads = o.threads;
  eo.mtp_path = o.mtp;
  eo.steering_file = o.steering_file;
  eo.steering = o.steering;
  eo.power = o.power;
  return eo;
}

std::string power_command(Engine& engine, const std::string& arg) {
  if (!arg.empty()) {
    char* end = nullptr;
    const long n = std::strtol(arg.c_str(), &end, 10);
    if (*end != '\0' || n < 1 || n > 100 || !engine.set_power(static_cast<int>(n)).is_ok()) {
      return "usage: /power N with 1 <= N <= 100 (percent of full speed)";
    }
  }
  return "power: " + std::to_string(engine.power()) + "%";
}

decode::Drafting drafting(const RunOptions& o) {
  return decode::Drafting{
      .drafts = o.mtp.empty() ? 0 : o.mtp_draft, .margin = o.mtp_margin, .source = {}};
}

SessionOptions session_options(const RunOptions& o) {
  return SessionOptions{.n_ctx = o.ctx, .prefill_chunk = o.prefill_chunk};
}

std::vector<std::string> args_for_parse(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) {
    args.push_back(std::string(argv[i]) == "-sys" ? "--system" : argv[i]);
  }
  return args;
}

}  // namespace ds4::app
