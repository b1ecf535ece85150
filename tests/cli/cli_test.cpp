// tests/cli/cli_test.cpp: the `ds4` binary as users run it, on the generated tiny model: one-shot
// output is deterministic at temperature 0 and equals the engine's own greedy continuation, the
// dump files are JSON that matches the engine's logits, and usage errors give one line + exit 2.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "ds4/engine.h"
#include "ds4/tokenizer.h"
#include "gguf/test_util.h"

namespace {

const std::string kModel = std::string(DS4_TEST_MODELS_DIR) + "/tiny-q2.gguf";

struct Outcome {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

Outcome run(const std::string& args) {
  // One file per test process: ctest runs this binary's cases side by side.
  const std::string err_path =
      ::testing::TempDir() + "ds4_cli_stderr." + std::to_string(::getpid()) + ".txt";
  const std::string cmd = std::string(DS4_CLI_PATH) + " " + args + " 2>" + err_path;
  Outcome r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err_path);
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  std::remove(err_path.c_str());
  return r;
}

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// The prompt the CLI renders for `-p TEXT --nothink` with the default system prompt.
std::vector<ds4::TokenId> engine_prompt(const ds4::Tokenizer& tok, const std::string& text) {
  return tok.encode("<｜begin▁of▁sentence｜>You are a helpful assistant<｜User｜>" + text +
                        "<｜Assistant｜></think>",
                    ds4::SpecialTokens::kRecognize);
}

TEST(Cli, OneShotAtTemperatureZeroIsDeterministicAndMatchesTheEngine) {
  const std::string args = "-m " + kModel + " -p 'Tell me a story' --nothink --temp 0 -n 12 -c 256";
  const Outcome a = run(args), b = run(args);
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.err.find("prefill"), std::string::npos) << "timing line on stderr: " << a.err;
  EXPECT_NE(a.err.find("generated 12 tokens"), std::string::npos) << a.err;
  // The same greedy continuation through the library.
  auto tok = ds4::Tokenizer::open(kModel);
  ASSERT_TRUE(tok.is_ok());
  auto e = ds4::Engine::open({.model_path = kModel});
  ASSERT_TRUE(e.is_ok());
  auto s = (*e)->create_session({.n_ctx = 256, .prefill_chunk = 256});
  ASSERT_TRUE(s.is_ok());
  ASSERT_TRUE((*s)->sync(engine_prompt(*tok, "Tell me a story")).is_ok());
  ds4::StreamDecoder dec(*tok);
  std::string text;
  for (int i = 0; i < 12; ++i) {
    const ds4::TokenId t = ds4::argmax((*s)->logits());
    text += dec.push(t);
    ASSERT_TRUE((*s)->eval(t).is_ok());
  }
  text += dec.flush();
  EXPECT_EQ(a.out, text + "\n");
}

// --mtp: greedy output with drafts is the output without; the trace counts the drafts, and the
// timing lines say how many were kept. A sampled run with drafts completes too (its distribution is
// tested in tests/model/decode_test.cpp).
TEST(Cli, MtpDraftsLeaveGreedyOutputAsItIs) {
  const std::string mtp = std::string(DS4_TEST_MODELS_DIR) + "/tiny-mtp.gguf";
  ds4::gguf::testing::TempDir dir;
  const std::string trace = dir.file("trace.jsonl");
  const std::string args = "-m " + kModel + " -p 'Tell me a story' --nothink --temp 0 -n 20 -c 256";
  const Outcome plain = run(args);
  const Outcome spec =
      run(args + " --mtp " + mtp + " --mtp-draft 3 --mtp-margin 0 --trace " + trace);
  ASSERT_EQ(plain.code, 0) << plain.err;
  ASSERT_EQ(spec.code, 0) << spec.err;
  EXPECT_EQ(spec.out, plain.out);
  EXPECT_NE(spec.err.find("ds4: mtp: "), std::string::npos) << spec.err;
  EXPECT_EQ(plain.err.find("ds4: mtp: "), std::string::npos) << plain.err;
  std::ifstream f(trace);
  std::string line;
  ASSERT_TRUE(std::getline(f, line));
  const auto j = nlohmann::json::parse(line);
  EXPECT_GT(j.at("mtp_steps").get<int>(), 0);
  // Three drafts a step, fewer where the limit is near.
  EXPECT_GE(j.at("mtp_drafted").get<int>(), j.at("mtp_steps").get<int>()) << line;
  EXPECT_LE(j.at("mtp_drafted").get<int>(), 3 * j.at("mtp_steps").get<int>()) << line;
  EXPECT_LE(j.at("mtp_accepted").get<int>(), j.at("mtp_drafted").get<int>()) << line;
  EXPECT_EQ(j.at("generated").get<int>(), 20);
  const Outcome sampled =
      run("-m " + kModel + " -p hi --nothink --temp 1 --seed 3 -n 16 -c 256 --mtp " + mtp +
          " --mtp-margin 0");
  ASSERT_EQ(sampled.code, 0) << sampled.err;
  EXPECT_NE(sampled.err.find("generated 16 tokens"), std::string::npos) << sampled.err;
  const Outcome bad = run(args + " --mtp " + kModel);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("not an MTP draft file"), std::string::npos) << bad.err;
}

TEST(Cli, DumpsAreJsonMatchingTheEngineLogits) {
  ds4::gguf::testing::TempDir dir;  // the dumps (~3 MB), removed when the test ends
  const std::string lp = dir.file("ds4_logprobs.json");
  const std::string lg = dir.file("ds4_logits.json");
  const std::string common = "-m " + kModel + " -p 'Hello' --nothink -c 256 ";
  ASSERT_EQ(run(common + "-n 3 --dump-logprobs " + lp + " --logprobs-top-k 5").code, 0);
  ASSERT_EQ(run(common + "--dump-logits " + lg).code, 0);
  const nlohmann::json jp = nlohmann::json::parse(std::ifstream(lp));
  const nlohmann::json jl = nlohmann::json::parse(std::ifstream(lg));
  // Both dumps from one run (the prompt evaluated once) are the two runs' files byte for byte.
  const std::string lp2 = lp + ".both", lg2 = lg + ".both";
  ASSERT_EQ(
      run(common + "-n 3 --dump-logprobs " + lp2 + " --logprobs-top-k 5 --dump-logits " + lg2).code,
      0);
  auto slurp = [](const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  EXPECT_EQ(slurp(lp2), slurp(lp));
  EXPECT_EQ(slurp(lg2), slurp(lg));

  auto tok = ds4::Tokenizer::open(kModel);
  ASSERT_TRUE(tok.is_ok());
  auto e = ds4::Engine::open({.model_path = kModel});
  ASSERT_TRUE(e.is_ok());
  auto s = (*e)->create_session({.n_ctx = 256, .prefill_chunk = 256});
  ASSERT_TRUE(s.is_ok());
  const auto prompt = engine_prompt(*tok, "Hello");
  ASSERT_TRUE((*s)->sync(prompt).is_ok());
  const auto logits = (*s)->logits();

  EXPECT_EQ(jl["source"], "ds4");
  EXPECT_EQ(jl["prompt_tokens"], prompt.size());
  EXPECT_EQ(jl["vocab"], logits.size());
  EXPECT_EQ(jl["quant_bits"], 2);
  ASSERT_EQ(jl["logits"].size(), logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    ASSERT_EQ(jl["logits"][i].get<float>(), logits[i]) << "logit " << i;  // %.9g round-trips
  }
  EXPECT_EQ(jl["argmax_token"]["id"], ds4::argmax(logits));

  EXPECT_EQ(jp["top_k"], 5);
  ASSERT_EQ(jp["steps"].size(), 3u);
  for (int step = 0; step < 3; ++step) {
    const auto& st = jp["steps"][step];
    const auto top = (*s)->top_logprobs(5);
    ASSERT_EQ(st["top_logprobs"].size(), 5u);
    for (int k = 0; k < 5; ++k) {
      EXPECT_EQ(st["top_logprobs"][k]["token"]["id"], top[k].id);
      EXPECT_EQ(st["top_logprobs"][k]["logprob"].get<float>(), top[k].logprob);
    }
    const ds4::TokenId sel = st["selected"]["id"];
    EXPECT_EQ(sel, ds4::argmax((*s)->logits()));
    const auto bytes = st["selected"]["bytes"].get<std::vector<int>>();
    EXPECT_EQ(std::string(bytes.begin(), bytes.end()), std::string(tok->token_bytes(sel)));
    ASSERT_TRUE((*s)->eval(sel).is_ok());
  }
}

TEST(Cli, UsageErrorsGiveOneLineAndExitCode2) {
  const std::vector<std::string> cases = {
      "--no-such-flag",
      "-m /nonexistent/model.gguf -p hi",
      "-m " + kModel + " -p hi --temp 500",
      "-m " + kModel + " -p hi --top-p 2",
      "-m " + kModel + " -p hi --prompt-file /etc/hostname",
      "-m " + kModel + " --dump-tokens",
      "-m " + kModel + " -p hi --nothink --think",
      "-m " + kModel + " -p hi --backend tpu",
      "-m " + kModel + " --prompt-file /nonexistent",
      "-m " + kModel + " -p hi --power 0",
      "-m " + kModel + " -p hi --power 101",
      "-m " + kModel + " -p hi --dir-steering-ffn 1",
      "-m " + kModel + " -p hi --dir-steering-file " + kModel + " --dir-steering-attn 200"};
  for (const std::string& args : cases) {
    const Outcome r = run(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1) << args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("ds4: ", 0), 0u) << r.err;
  }
  const Outcome missing = run("-m /nonexistent/model.gguf -p hi");
  EXPECT_NE(missing.err.find("download_model.sh"), std::string::npos) << missing.err;
}

// --power paces the work and changes no token; a direction file of the wrong size is refused with
// the size this model needs; with a good one the program says steering is on.
TEST(Cli, PowerKeepsTheTokensAndSteeringFilesAreChecked) {
  const std::string greedy = "-m " + kModel + " -p 'Tell me a story' --temp 0 --nothink -n 24";
  const Outcome full = run(greedy), half = run(greedy + " --power 40");
  ASSERT_EQ(full.code, 0) << full.err;
  ASSERT_EQ(half.code, 0) << half.err;
  EXPECT_EQ(half.out, full.out);
  const std::string dirs = ::testing::TempDir() + "dirs." + std::to_string(::getpid()) + ".f32";
  {
    std::ofstream f(dirs, std::ios::binary);
    f << std::string(100, '\0');
  }
  const Outcome bad = run(greedy + " --dir-steering-file " + dirs);
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("is 100 bytes"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("needs exactly"), std::string::npos) << bad.err;
  const auto e = ds4::Engine::open({.model_path = kModel});
  ASSERT_TRUE(e.is_ok());
  {
    std::ofstream f(dirs, std::ios::binary | std::ios::trunc);
    f << std::string(static_cast<size_t>((*e)->info().n_layer) * (*e)->info().n_embd * 4, '\0');
  }
  const Outcome zero = run(greedy + " --dir-steering-file " + dirs);
  EXPECT_EQ(zero.code, 0) << zero.err;
  EXPECT_NE(zero.err.find("directional steering enabled: " + dirs + " attn=0 ffn=1"),
            std::string::npos)
      << zero.err;
  EXPECT_EQ(zero.out, full.out) << "zero directions remove nothing";
  std::remove(dirs.c_str());
}

TEST(Cli, DumpTokensPrintsTheIdsAsWritten) {
  const Outcome r = run("-m " + kModel + " -p 'Hello<｜User｜>' --dump-tokens");
  ASSERT_EQ(r.code, 0) << r.err;
  auto tok = ds4::Tokenizer::open(kModel);
  ASSERT_TRUE(tok.is_ok());
  const auto ids = tok->encode("Hello<｜User｜>", ds4::SpecialTokens::kRecognize);
  std::string want = "[";
  for (size_t i = 0; i < ids.size(); ++i) want += (i ? ", " : "") + std::to_string(ids[i]);
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), want + "]");
  EXPECT_EQ(lines(r.out), 1 + static_cast<int>(ids.size()));
}

}  // namespace
