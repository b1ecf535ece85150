// apps/steer/main.cpp: `ds4-steer` (features.md §8.3, issue 54).
//   ds4-steer build -m MODEL --good FILE --bad FILE -o OUT.f32 [--component ffn|attn] ...
//     a direction file from target and contrast prompts (tools/steer/directions.h)
//   ds4-steer sweep -m MODEL --dir-steering-file OUT.f32 -p PROMPT [--scales -2,-1,0,1,2] ...
//     the prompt's greedy answer at each scale, to choose one
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "apps/common/run_options.h"
#include "ds4/chat.h"
#include "ds4/engine.h"
#include "ds4/tokenizer.h"
#include "tools/steer/directions.h"

namespace {

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "ds4-steer: %s\n", msg.c_str());
  return 2;
}

struct SweepOptions {
  ds4::app::RunOptions run;
  std::string prompt;
  std::string system = "You are a helpful assistant";  // ds4's default: scale 0 answers as ds4
  std::vector<float> scales = {-2.0f, -1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 2.0f};
  std::string component = "ffn";
  int tokens = 64;
};

// Greedy answers of one prompt at each scale, one engine for all.
int run_sweep(const SweepOptions& o) {
  ds4::app::RunOptions run = o.run;
  run.steering = {};
  auto engine = ds4::Engine::open(ds4::app::engine_options(run));
  if (!engine.is_ok()) {
    std::fprintf(stderr, "ds4-steer: %s\n", engine.status().message().c_str());
    return 1;
  }
  auto tok = ds4::Tokenizer::open(o.run.model);
  if (!tok.is_ok()) {
    std::fprintf(stderr, "ds4-steer: %s\n", tok.status().message().c_str());
    return 1;
  }
  std::vector<ds4::chat::Message> msgs;
  if (!o.system.empty()) msgs.push_back({.role = ds4::chat::Role::kSystem, .content = o.system});
  msgs.push_back({.role = ds4::chat::Role::kUser, .content = o.prompt});
  const auto text = ds4::chat::render(msgs, {.think = o.run.think, .context_size = o.run.ctx});
  if (!text.is_ok()) return usage_error(text.status().message());
  const std::vector<ds4::TokenId> prompt = tok->encode(*text, ds4::SpecialTokens::kRecognize);
  for (const float scale : o.scales) {
    const ds4::Steering s =
        o.component == "attn" ? ds4::Steering{.attn = scale} : ds4::Steering{.ffn = scale};
    ds4::SessionOptions so = ds4::app::session_options(o.run);
    so.steering = s;
    auto session = (*engine)->create_session(so);
    ds4::Status st = session.is_ok() ? (*session)->sync(prompt).status() : session.status();
    std::vector<ds4::TokenId> out;
    for (int i = 0; st.is_ok() && i < o.tokens; ++i) {
      const ds4::TokenId best = ds4::argmax((*session)->logits());
      if (best == tok->special_ids().eos) break;
      out.push_back(best);
      st = (*session)->eval(best);
    }
    if (!st.is_ok()) {
      std::fprintf(stderr, "ds4-steer: scale %g: %s\n", static_cast<double>(scale),
                   st.message().c_str());
      return 1;
    }
    std::printf("== %s %g\n%s\n", o.component.c_str(), static_cast<double>(scale),
                tok->decode(out).c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ds4-steer: build and try directional steering files"};
  app.require_subcommand(1);

  ds4::steer::BuildOptions build;
  std::string component = "ffn";
  CLI::App* b = app.add_subcommand("build", "a direction file from target and contrast prompts");
  b->add_option("-m,--model", build.model, "model GGUF")->required();
  b->add_option("--good-file,--good", build.good_file, "target prompts, one per line")
      ->required()
      ->check(CLI::ExistingFile);
  b->add_option("--bad-file,--bad", build.bad_file, "contrast prompts, one per line")
      ->required()
      ->check(CLI::ExistingFile);
  b->add_option("-o,--output", build.output, "the direction file (float32; metadata beside it)")
      ->required();
  b->add_option("--component", component, "ffn (the FFN outputs) or attn (attention outputs)")
      ->check(CLI::IsMember({"ffn", "attn", "ffn_out", "attn_out"}))
      ->capture_default_str();
  b->add_option("--ctx", build.ctx, "context per prompt")
      ->check(CLI::Range(16, 1 << 20))
      ->capture_default_str();
  b->add_option("--system", build.system, "system prompt")->capture_default_str();
  b->add_flag("--think", build.think, "capture after <think> (default: after </think>)");
  b->add_flag("--pair-normalize", build.pair_normalize,
              "average the normalised pair differences instead of the means' difference");
  bool no_orthogonalize = false;
  b->add_flag("--no-orthogonalize", no_orthogonalize,
              "keep the part along the contrast prompts' mean direction");
  b->add_option("-t,--threads", build.threads, "CPU threads (0: all)")->check(CLI::Range(0, 4096));
  b->add_flag("--progress", build.progress, "a line per prompt on stderr");
  std::string build_backend = "cpu";
  b->add_option("--backend", build_backend, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();

  SweepOptions sweep;
  sweep.run.think = ds4::chat::ThinkMode::kNone;
  sweep.run.ctx = 4096;
  CLI::App* w = app.add_subcommand("sweep", "a prompt's greedy answer at each steering scale");
  ds4::app::RunFlags run_flags(
      *w, sweep.run, ds4::app::kEngine | ds4::app::kCtx | ds4::app::kThink | ds4::app::kSteering);
  w->add_option("-p,--prompt", sweep.prompt, "the prompt")->required();
  w->add_option("--system", sweep.system, "system prompt")->capture_default_str();
  w->add_option("--scales", sweep.scales, "the scales to try")
      ->delimiter(',')
      ->check(CLI::Range(-ds4::Steering::kMaxScale, ds4::Steering::kMaxScale));
  w->add_option("--component", sweep.component, "ffn or attn: where the scales go")
      ->check(CLI::IsMember({"ffn", "attn"}))
      ->capture_default_str();
  w->add_option("-n,--tokens", sweep.tokens, "tokens per answer")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    return usage_error(e.what());
  }
  if (b->parsed()) {
    build.component =
        component.rfind("attn", 0) == 0 ? ds4::Sublayer::kAttention : ds4::Sublayer::kFfn;
    build.orthogonalize = !no_orthogonalize;
    build.backend = build_backend == "cuda" ? ds4::BackendKind::kCuda : ds4::BackendKind::kCpu;
    ds4::steer::BuildReport report;
    const ds4::Status st = ds4::steer::build(build, &report);
    if (!st.is_ok()) {
      std::fprintf(stderr, "ds4-steer: %s\n", st.message().c_str());
      return st.code() == ds4::StatusCode::kInvalidArgument ? 2 : 1;
    }
    std::printf("wrote %s (%d layers x %lld, %d prompt pairs) and %s\n", build.output.c_str(),
                report.n_layer, static_cast<long long>(report.n_embd), report.pairs,
                report.metadata_path.c_str());
    return 0;
  }
  if (const std::string err = run_flags.finish(); !err.empty()) return usage_error(err);
  if (sweep.run.steering_file.empty()) return usage_error("sweep needs --dir-steering-file");
  return run_sweep(sweep);
}
