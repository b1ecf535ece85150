// apps/gguf/vocab.cpp: `ds4-gguf vocab TOKENIZER_JSON -o FILE.gguf` -- a vocabulary-only GGUF in
// the layout of the published DeepSeek V4 files, built from a Hugging Face tokenizer.json.
//
// The DeepSeek V3 tokenizer.json (the V4 BPE is V3's) holds 128000 BPE tokens and the added tokens
// up to id 128814. V4 widened the vocabulary to 129280 and placed its own specials above that
// (chat-format.md); the ids we know are added here, every other id becomes a placeholder
// `<｜place▁holder▁no▁N｜>` with N = id - 128000, continuing V3's placeholder numbering.
#include <cstdio>
#include <string>

#include "apps/gguf/commands.h"
#include "gguf/writer.h"
#include "tools/convert/tokenizer_keys.h"

namespace ds4::apps::gguf_tool {

int run_vocab(const VocabOptions& opts) {
  auto fail = [](const std::string& msg) {
    std::fprintf(stderr, "ds4-gguf vocab: %s\n", msg.c_str());
    return 1;
  };
  auto keys = convert::tokenizer_metadata_from_json(opts.tokenizer_json, opts.n_vocab);
  if (!keys) return fail(keys.status().to_string());
  auto w = gguf::Writer::create(opts.output);
  if (!w) return fail(w.status().to_string());
  using gguf::Value;
  std::vector<std::pair<std::string, Value>> kv = {
      {"general.architecture", Value::string("deepseek4")},
      {"general.name", Value::string("DeepSeek V4 vocabulary")},
      {"general.type", Value::string("vocab")},
      {"deepseek4.vocab_size", Value::u32(static_cast<uint32_t>(opts.n_vocab))},
  };
  kv.insert(kv.end(), keys->begin(), keys->end());
  size_t n_merges = 0;
  for (const auto& [key, value] : kv) {
    if (key == "tokenizer.ggml.merges") n_merges = value.size();
    if (Status s = w->add_metadata(key, value); !s.is_ok()) return fail(s.to_string());
  }
  if (Status s = w->finish(); !s.is_ok()) return fail(s.to_string());
  std::printf("wrote %s: %d tokens, %zu merges\n", opts.output.c_str(), opts.n_vocab, n_merges);
  return 0;
}

}  // namespace ds4::apps::gguf_tool
