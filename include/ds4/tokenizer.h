// include/ds4/tokenizer.h: text <-> token ids for DeepSeek V4, exactly as the reference tokenizer.
// Owns: the vocabulary, merges and special tokens read from a GGUF (model or vocabulary-only file),
// byte-level BPE encoding and decoding, and an incremental UTF-8-safe stream decoder.
// Does not own: chat rendering (chat.h produces the text this tokenizes).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ds4/status.h"
#include "ds4/types.h"

namespace ds4 {

// Whether encode() turns the text of special tokens (BOS, `<｜User｜>`, `<think>`, ...) into their
// ids. Rendered chat prompts are encoded with kRecognize; user text embedded in anything else with
// kAsText, so a user cannot inject control tokens.
enum class SpecialTokens { kAsText, kRecognize };

// A byte range [begin, end) of a text.
struct TextRange {
  size_t begin = 0;
  size_t end = 0;
  bool operator==(const TextRange&) const = default;
};

// Ids of the tokens the engine needs, resolved by their exact strings when the vocabulary loads.
struct SpecialIds {
  TokenId bos = -1;          // <｜begin▁of▁sentence｜>
  TokenId eos = -1;          // <｜end▁of▁sentence｜>
  TokenId user = -1;         // <｜User｜>
  TokenId assistant = -1;    // <｜Assistant｜>
  TokenId think_start = -1;  // <think>
  TokenId think_end = -1;    // </think>
  TokenId dsml = -1;         // ｜DSML｜
};

class Tokenizer {
 public:
  // Reads tokenizer.ggml.tokens / merges (and token_type when present) from a GGUF file.
  static Result<Tokenizer> open(const std::string& gguf_path);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  std::vector<TokenId> encode(std::string_view text, SpecialTokens specials) const;
  // Appends to `out` (lets callers build a prompt from several spans without copies).
  void encode_append(std::string_view text, SpecialTokens specials,
                     std::vector<TokenId>* out) const;
  // A rendered prompt: special tokens recognised, except where they would start or end inside one
  // of the `plain` ranges (client text: ascending, disjoint), whose special-token strings stay
  // text. With no ranges this is encode_append(text, kRecognize, out); the text between
  // recognised specials is encoded the same either way.
  void encode_rendered(std::string_view text, std::span<const TextRange> plain,
                       std::vector<TokenId>* out) const;

  // Raw bytes of one token (special tokens: their text). Empty for out-of-range ids.
  std::string_view token_bytes(TokenId id) const;
  // Concatenated raw bytes of the ids; may end inside a UTF-8 character.
  std::string decode(std::span<const TokenId> ids) const;
  // The vocabulary string of a token (byte-level form for ordinary tokens), for debugging.
  std::string_view piece(TokenId id) const;
  std::optional<TokenId> find(std::string_view vocab_string) const;
  bool is_special(TokenId id) const;

  int32_t vocab_size() const;
  const SpecialIds& special_ids() const;
  // The most bytes one token covers (special tokens included): a text of B bytes encodes to at
  // least ceil(B / max_token_bytes()) tokens, whatever it says.
  size_t max_token_bytes() const;

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  friend class TokenizerLoader;
  std::unique_ptr<Impl> impl_;
};

// Turns a stream of token ids into text chunks that are always complete, valid UTF-8: bytes of a
// character split across tokens are held until the character is complete. Bytes that can never
// form a valid character are replaced by U+FFFD.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok) : tok_(&tok) {}
  // The text this token completes (possibly empty).
  std::string push(TokenId id);
  // Whatever is still held (incomplete at end of stream), as U+FFFD replacements.
  std::string flush();

 private:
  const Tokenizer* tok_;
  std::string pending_;
};

}  // namespace ds4
