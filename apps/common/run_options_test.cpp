// The shared run options: each program declares only the options it takes, with its own defaults;
// after parsing, the think flags and the seed are folded, conflicting think flags are a usage
// error, and the engine and session options follow from the values.
#include "apps/common/run_options.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace ds4::app {
namespace {

// Parses `args` (without the program name) into `o` with the options `which`.
std::string parse(RunOptions& o, unsigned which, std::vector<std::string> args) {
  CLI::App app;
  RunFlags flags(app, o, which);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them reversed
  app.parse(reversed);
  return flags.finish();
}

TEST(RunOptions, ParsesTheSharedFlags) {
  RunOptions o;
  EXPECT_EQ(
      parse(o, kEngine | kCtx | kPrefillChunk | kSampling | kChatTemplate | kThink,
            {"-m", "x.gguf", "--backend", "cuda", "-t", "3", "-c", "4096", "--prefill-chunk", "512",
             "--temp", "0", "--top-k", "40", "--seed", "7", "--chat-template", "ds4", "--nothink"}),
      "");
  EXPECT_EQ(o.model, "x.gguf");
  EXPECT_EQ(o.sampling.temperature, 0.0f);
  EXPECT_EQ(o.sampling.top_k, 40);
  EXPECT_EQ(o.sampling.seed, 7u);
  EXPECT_EQ(o.chat_template, chat::Template::kDs4);
  EXPECT_EQ(o.think, chat::ThinkMode::kNone);
  const EngineOptions eo = engine_options(o);
  EXPECT_EQ(eo.model_path, "x.gguf");
  EXPECT_EQ(eo.backend, BackendKind::kCuda);
  EXPECT_EQ(eo.threads, 3);
  const SessionOptions so = session_options(o);
  EXPECT_EQ(so.n_ctx, 4096);
  EXPECT_EQ(so.prefill_chunk, 512);
}

TEST(RunOptions, AProgramTakesOnlyWhatItDeclares) {
  RunOptions o{.think = chat::ThinkMode::kNone};  // a program's own default
  EXPECT_THROW(parse(o, kThink, {"--temp", "0.5"}), CLI::ExtrasError);
  RunOptions d{.think = chat::ThinkMode::kNone};
  EXPECT_EQ(parse(d, kThink, {}), "");
  EXPECT_EQ(d.think, chat::ThinkMode::kNone);  // the default stands
  EXPECT_EQ(parse(d, kThink, {"--think-max"}), "");
  EXPECT_EQ(d.think, chat::ThinkMode::kMax);
}

TEST(RunOptions, ConflictsAndBadValuesAreUsageErrors) {
  RunOptions o;
  EXPECT_EQ(parse(o, kThink, {"--think", "--nothink"}),
            "choose one of --think, --nothink, --think-max");
  EXPECT_THROW(parse(o, kBackend, {"--backend", "tpu"}), CLI::ValidationError);
  EXPECT_THROW(parse(o, kChatTemplate, {"--chat-template", "chatml"}), CLI::ValidationError);
  EXPECT_THROW(parse(o, kCtx, {"--ctx", "1"}), CLI::ValidationError);
}

// Steering (features.md §8.2): a file alone gives the FFN scale 1; a scale flag replaces that
// default (the other stays 0); a scale without a file and a scale out of range are usage errors.
// --power takes 1-100. Both reach the engine options.
TEST(RunOptions, SteeringDefaultsAndPowerRange) {
  const std::string file = ::testing::TempDir() + "run_options_dirs.f32";
  std::fclose(std::fopen(file.c_str(), "wb"));
  RunOptions a;
  EXPECT_EQ(parse(a, kSteering | kPower, {"--dir-steering-file", file, "--power", "30"}), "");
  EXPECT_EQ(a.steering, (Steering{.attn = 0, .ffn = 1}));
  EXPECT_EQ(engine_options(a).steering_file, file);
  EXPECT_EQ(engine_options(a).steering, a.steering);
  EXPECT_EQ(engine_options(a).power, 30);
  RunOptions b;
  EXPECT_EQ(parse(b, kSteering, {"--dir-steering-file", file, "--dir-steering-attn", "-2"}), "");
  EXPECT_EQ(b.steering, (Steering{.attn = -2, .ffn = 0}));
  RunOptions c;
  EXPECT_EQ(parse(c, kSteering, {"--dir-steering-ffn", "0.5"}),
            "--dir-steering-ffn and --dir-steering-attn need --dir-steering-file");
  RunOptions d;
  EXPECT_THROW(parse(d, kSteering, {"--dir-steering-file", file, "--dir-steering-ffn", "101"}),
               CLI::ValidationError);
  EXPECT_THROW(parse(d, kPower, {"--power", "0"}), CLI::ValidationError);
  EXPECT_THROW(parse(d, kPower, {"--power", "101"}), CLI::ValidationError);
  EXPECT_EQ(RunOptions{}.power, 100);
  std::remove(file.c_str());
}

}  // namespace
}  // namespace ds4::app
