// Protects: chat rendering + tokenization together, against DeepSeek's official API on the five
// recorded prompts (../shared/fixtures/official-vectors): each prompt rendered by chat::render as a
// non-thinking user turn must tokenize to exactly the API's usage.prompt_tokens, and every token
// the API reported (selected and top alternatives) must be exactly one entry of our vocabulary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "ds4/chat.h"
#include "ds4/tokenizer.h"
#include "tokenizer/test_vocab.h"

namespace ds4 {
namespace {

namespace fs = std::filesystem;

fs::path vectors_dir() {
  return fs::path(tokenizer::testing::source_dir()).parent_path() / "shared" / "fixtures" /
         "official-vectors";
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}

TEST(OfficialVectors, PromptTokenCountsMatchTheApi) {
  DS4_REQUIRE_VOCAB(tok);
  if (!fs::exists(vectors_dir())) GTEST_SKIP() << "../shared/fixtures not present";
  const auto manifest = nlohmann::json::parse(slurp(vectors_dir() / "manifest.json"));
  int checked = 0;
  for (const auto& p : manifest.at("prompts")) {
    const auto official =
        nlohmann::json::parse(slurp(vectors_dir() / p.at("official_file").get<std::string>()));
    const std::string prompt = slurp(vectors_dir() / p.at("prompt_file").get<std::string>());
    ASSERT_EQ(official.at("request").at("messages").at(0).at("content").get<std::string>(), prompt);
    const std::string rendered =
        "<｜begin▁of▁sentence｜><｜User｜>" + prompt + "<｜Assistant｜></think>";
    const auto ids = tok->encode(rendered, SpecialTokens::kRecognize);
    EXPECT_EQ(static_cast<int64_t>(ids.size()),
              official.at("usage").at("prompt_tokens").get<int64_t>())
        << p.at("id");
    ++checked;
  }
  EXPECT_EQ(checked, 5);
}

TEST(OfficialVectors, EveryReportedTokenIsOneVocabularyEntry) {
  DS4_REQUIRE_VOCAB(tok);
  if (!fs::exists(vectors_dir())) GTEST_SKIP() << "../shared/fixtures not present";
  std::set<std::string> vocab_bytes;
  for (TokenId id = 0; id < tok->vocab_size(); ++id) vocab_bytes.emplace(tok->token_bytes(id));
  std::istringstream vec(slurp(vectors_dir() / "official.vec"));
  std::string line;
  int tokens = 0;
  while (std::getline(vec, line)) {
    std::istringstream ls(line);
    std::string kind, a, b;
    ls >> kind >> a >> b;
    std::string hex;
    if (kind == "step")
      hex = b;  // step INDEX SELECTED_HEX TOPN
    else if (kind == "top")
      hex = a;  // top TOKEN_HEX LOGPROB
    else
      continue;
    const std::string bytes = unhex(hex);
    EXPECT_TRUE(vocab_bytes.count(bytes))
        << kind << " token bytes " << hex << " are not one vocabulary entry";
    ++tokens;
  }
  EXPECT_GT(tokens, 20);
}

}  // namespace
}  // namespace ds4
