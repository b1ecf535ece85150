// tools/convert/tokenizer_keys.cpp: tokenizer metadata from a vocabulary GGUF or tokenizer.json.
#include "tools/convert/tokenizer_keys.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "gguf/reader.h"

namespace ds4::convert {
namespace {

using nlohmann::json;

// GGUF token types (llama.cpp convention).
constexpr int32_t kTypeNormal = 1;
constexpr int32_t kTypeControl = 3;
constexpr int32_t kTypeUserDefined = 4;

// "｜" (U+FF5C) and "▁" (U+2581) as UTF-8, to build V4's special token spellings.
#define DS4_BAR "\xef\xbd\x9c"
#define DS4_SPACE "\xe2\x96\x81"

struct KnownSpecial {
  int32_t id;
  const char* text;
};
// V4 specials above the V3 tokenizer's range (chat-format.md, "Tokenizer facts").
constexpr KnownSpecial kV4Specials[] = {
    {128821, "<think>"},
    {128822, "</think>"},
    {128825, DS4_BAR "DSML" DS4_BAR},
    {128828, "<" DS4_BAR "latest_reminder" DS4_BAR ">"},
    {128829, "<" DS4_BAR "action" DS4_BAR ">"},
    {128830, "<" DS4_BAR "query" DS4_BAR ">"},
    {128831, "<" DS4_BAR "authority" DS4_BAR ">"},
    {128832, "<" DS4_BAR "domain" DS4_BAR ">"},
    {128836, "<" DS4_BAR "title" DS4_BAR ">"},
    {128845, "<" DS4_BAR "read_url" DS4_BAR ">"},
};
constexpr int32_t kPlaceholderBase = 128000;

std::string placeholder(int64_t id) {
  return "<" DS4_BAR "place" DS4_SPACE "holder" DS4_SPACE "no" DS4_SPACE +
         std::to_string(id - kPlaceholderBase) + DS4_BAR ">";
}

}  // namespace

Result<MetadataList> tokenizer_metadata_from_gguf(const std::string& path, int n_vocab) {
  auto r = gguf::Reader::open(path);
  if (!r) return r.status().with_context(path);
  MetadataList out;
  for (const gguf::KeyValue& kv : r->metadata()) {
    if (kv.key.rfind("tokenizer.", 0) == 0) out.emplace_back(kv.key, kv.value);
  }
  const gguf::Value* tokens = r->find("tokenizer.ggml.tokens");
  if (tokens == nullptr || tokens->type() != gguf::ValueType::kArray)
    return Status::invalid_model("%s: no tokenizer.ggml.tokens array", path.c_str());
  if (tokens->size() != static_cast<uint64_t>(n_vocab))
    return Status::invalid_model("%s: %llu tokens, but the model's vocab_size is %d", path.c_str(),
                                 static_cast<unsigned long long>(tokens->size()), n_vocab);
  return out;
}

Result<MetadataList> tokenizer_metadata_from_json(const std::string& path, int n_vocab) {
  json j;
  try {
    std::ifstream in(path);
    if (!in) return Status::not_found("cannot open '%s'", path.c_str());
    j = json::parse(in);
  } catch (const json::exception& e) {
    return Status::invalid_file("'%s' is not valid JSON: %s", path.c_str(), e.what());
  }
  const size_t n = static_cast<size_t>(n_vocab);
  std::vector<std::string> tokens(n);
  std::vector<int32_t> types(n, kTypeControl);
  std::vector<char> set(n, 0);
  std::vector<std::string> merges;
  std::string bad;  // first out-of-range entry
  auto put = [&](int64_t id, std::string text, int32_t type) {
    if (id < 0 || static_cast<uint64_t>(id) >= n) {
      if (bad.empty()) bad = text + " (id " + std::to_string(id) + ")";
      return;
    }
    tokens[static_cast<size_t>(id)] = std::move(text);
    types[static_cast<size_t>(id)] = type;
    set[static_cast<size_t>(id)] = 1;
  };
  try {
    const json& m = j.at("model");
    if (m.at("type").get<std::string>() != "BPE")
      return Status::invalid_model("%s: tokenizer model is not BPE", path.c_str());
    for (const auto& [text, id] : m.at("vocab").items()) put(id.get<int64_t>(), text, kTypeNormal);
    for (const json& merge : m.at("merges")) {
      // Older files spell a merge "a b", newer ones ["a", "b"].
      merges.push_back(merge.is_string()
                           ? merge.get<std::string>()
                           : merge.at(0).get<std::string>() + " " + merge.at(1).get<std::string>());
    }
    if (j.contains("added_tokens")) {
      for (const json& t : j.at("added_tokens")) {
        put(t.at("id").get<int64_t>(), t.at("content").get<std::string>(),
            t.value("special", false) ? kTypeControl : kTypeUserDefined);
      }
    }
  } catch (const json::exception& e) {
    return Status::invalid_file("%s: unexpected tokenizer.json layout: %s", path.c_str(), e.what());
  }
  if (!bad.empty())
    return Status::invalid_model("%s: token %s is beyond vocab_size %d", path.c_str(), bad.c_str(),
                                 n_vocab);
  for (const KnownSpecial& k : kV4Specials) {
    if (static_cast<size_t>(k.id) < n && !set[static_cast<size_t>(k.id)])
      put(k.id, k.text, kTypeControl);
  }
  std::unordered_map<std::string, size_t> first;
  for (size_t i = 0; i < n; ++i) {
    if (!set[i]) tokens[i] = placeholder(static_cast<int64_t>(i));
    if (auto [it, fresh] = first.emplace(tokens[i], i); !fresh)
      return Status::invalid_model("%s: token id %zu has the same string as id %zu", path.c_str(),
                                   i, it->second);
  }
  MetadataList out;
  out.emplace_back("tokenizer.ggml.model", gguf::Value::string("gpt2"));
  out.emplace_back("tokenizer.ggml.pre", gguf::Value::string("joyai-llm"));
  out.emplace_back("tokenizer.ggml.tokens", gguf::Value::string_array(tokens));
  out.emplace_back("tokenizer.ggml.token_type", gguf::Value::i32_array(types));
  out.emplace_back("tokenizer.ggml.merges", gguf::Value::string_array(merges));
  out.emplace_back("tokenizer.ggml.bos_token_id", gguf::Value::u32(0));
  out.emplace_back("tokenizer.ggml.eos_token_id", gguf::Value::u32(1));
  return out;
}

}  // namespace ds4::convert

#undef DS4_BAR
#undef DS4_SPACE
