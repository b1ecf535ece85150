// apps/gguf/vocab.cpp: `ds4-gguf vocab TOKENIZER_JSON -o FILE.gguf` -- a vocabulary-only GGUF in
// the layout of the published DeepSeek V4 files, built from a Hugging Face tokenizer.json.
//
// The DeepSeek V3 tokenizer.json (the V4 BPE is V3's) holds 128000 BPE tokens and the added tokens
// up to id 128814. V4 widened the vocabulary to 129280 and placed its own specials above that
// (chat-format.md); the ids we know are added here, every other id becomes a placeholder
// `<｜place▁holder▁no▁N｜>` with N = id - 128000, continuing V3's placeholder numbering.
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/gguf/commands.h"
#include "gguf/writer.h"

namespace ds4::apps::gguf_tool {
namespace {

using nlohmann::json;

enum TokenType : int32_t { kNormal = 1, kControl = 3, kUserDefined = 4 };

struct V4Special {
  int32_t id;
  const char* text;
};
// chat-format.md "Tokenizer facts".
constexpr V4Special kV4Specials[] = {
    {128821, "<think>"},
    {128822, "</think>"},
    {128825,
     "\xef\xbd\x9c"
     "DSML\xef\xbd\x9c"},
    {128828, "<\xef\xbd\x9clatest_reminder\xef\xbd\x9c>"},
    {128829,
     "<\xef\xbd\x9c"
     "action\xef\xbd\x9c>"},
    {128830, "<\xef\xbd\x9cquery\xef\xbd\x9c>"},
    {128831,
     "<\xef\xbd\x9c"
     "authority\xef\xbd\x9c>"},
    {128832,
     "<\xef\xbd\x9c"
     "domain\xef\xbd\x9c>"},
    {128836, "<\xef\xbd\x9ctitle\xef\xbd\x9c>"},
    {128845, "<\xef\xbd\x9cread_url\xef\xbd\x9c>"},
};

int fail(const std::string& msg) {
  std::fprintf(stderr, "ds4-gguf vocab: %s\n", msg.c_str());
  return 1;
}

}  // namespace

int run_vocab(const VocabOptions& opts) {
  json j;
  try {
    std::ifstream in(opts.tokenizer_json);
    if (!in) return fail("cannot open '" + opts.tokenizer_json + "'");
    j = json::parse(in);
  } catch (const std::exception& e) {
    return fail("'" + opts.tokenizer_json + "' is not valid JSON: " + e.what());
  }
  const size_t n = static_cast<size_t>(opts.n_vocab);
  std::vector<std::string> tokens(n);
  std::vector<int32_t> types(n, kControl);
  std::vector<bool> filled(n, false);
  auto place = [&](int64_t id, const std::string& text, int32_t type) -> bool {
    if (id < 0 || static_cast<size_t>(id) >= n) return false;
    tokens[static_cast<size_t>(id)] = text;
    types[static_cast<size_t>(id)] = type;
    filled[static_cast<size_t>(id)] = true;
    return true;
  };
  std::vector<std::string> merges;
  try {
    const json& model = j.at("model");
    if (model.at("type").get<std::string>() != "BPE") return fail("tokenizer model is not BPE");
    for (const auto& [text, id] : model.at("vocab").items()) {
      if (!place(id.get<int64_t>(), text, kNormal))
        return fail("vocab id out of range for '" + text + "'");
    }
    for (const json& m : model.at("merges")) {
      merges.push_back(m.is_string()
                           ? m.get<std::string>()
                           : m.at(0).get<std::string>() + " " + m.at(1).get<std::string>());
    }
    for (const json& t : j.at("added_tokens")) {
      const int32_t type = t.value("special", false) ? kControl : kUserDefined;
      if (!place(t.at("id").get<int64_t>(), t.at("content").get<std::string>(), type)) {
        return fail("added token id out of range: " + t.dump());
      }
    }
  } catch (const std::exception& e) {
    return fail(std::string("unexpected tokenizer.json layout: ") + e.what());
  }
  for (const V4Special& s : kV4Specials) {
    if (static_cast<size_t>(s.id) < n && !filled[static_cast<size_t>(s.id)])
      place(s.id, s.text, kControl);
  }
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < n; ++i) {
    if (!filled[i]) {
      tokens[i] = "<\xef\xbd\x9cplace\xe2\x96\x81holder\xe2\x96\x81no\xe2\x96\x81" +
                  std::to_string(i - 128000) + "\xef\xbd\x9c>";
    }
    if (!seen.emplace(tokens[i], i).second) {
      return fail("token string of id " + std::to_string(i) + " duplicates id " +
                  std::to_string(seen[tokens[i]]));
    }
  }

  auto w = gguf::Writer::create(opts.output);
  if (!w) return fail(w.status().to_string());
  using gguf::Value;
  const std::pair<const char*, Value> kv[] = {
      {"general.architecture", Value::string("deepseek4")},
      {"general.name", Value::string("DeepSeek V4 vocabulary")},
      {"general.type", Value::string("vocab")},
      {"deepseek4.vocab_size", Value::u32(static_cast<uint32_t>(n))},
      {"tokenizer.ggml.model", Value::string("gpt2")},
      {"tokenizer.ggml.pre", Value::string("joyai-llm")},
      {"tokenizer.ggml.tokens", Value::string_array(tokens)},
      {"tokenizer.ggml.token_type", Value::i32_array(types)},
      {"tokenizer.ggml.merges", Value::string_array(merges)},
      {"tokenizer.ggml.bos_token_id", Value::u32(0)},
      {"tokenizer.ggml.eos_token_id", Value::u32(1)},
  };
  for (const auto& [key, value] : kv) {
    if (Status s = w->add_metadata(key, value); !s.is_ok()) return fail(s.to_string());
  }
  if (Status s = w->finish(); !s.is_ok()) return fail(s.to_string());
  std::printf("wrote %s: %zu tokens, %zu merges\n", opts.output.c_str(), n, merges.size());
  return 0;
}

}  // namespace ds4::apps::gguf_tool
