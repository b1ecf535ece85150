// src/tokenizer/vocab.h: the vocabulary and merge table loaded from GGUF metadata.
// Owns: token strings and types, string -> id lookup, merge ranks keyed by id pairs, the decoded
// bytes of every token, and the list of special tokens recognised in rendered text.
// Does not own: the BPE algorithm (bpe.cpp) or the splitting of text (pretokenize.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ds4/status.h"
#include "ds4/tokenizer.h"
#include "gguf/reader.h"
#include "tokenizer/byte_level.h"

namespace ds4::tokenizer {

// llama.cpp's tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct Merge {
  int32_t rank;
  TokenId result;
};

// Merge lookup by (left, right) id pair: an open-addressing table with linear probing. BPE does
// one lookup per adjacent pair, so this is the tokenizer's hottest structure; a flat array keeps it
// to one or two cache lines per lookup (std::unordered_map costs several dependent misses).
class MergeTable {
 public:
  void reserve(size_t n);
  // Keeps the first insertion of a key (the lowest rank when merges are added in rank order).
  void insert(uint64_t key, Merge m);
  const Merge* find(uint64_t key) const {
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      if (keys_[i] == key) return &values_[i];
      if (keys_[i] == kEmpty) return nullptr;
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  size_t slot(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  std::vector<uint64_t> keys_;
  std::vector<Merge> values_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

struct Vocab {
  std::vector<std::string> tokens;  // vocabulary strings as stored in the GGUF
  std::vector<TokenType> types;
  std::vector<std::string> bytes;  // raw bytes each token decodes to
  std::vector<bool> special;       // recognised in rendered text, decoded verbatim
  std::unordered_map<std::string_view, TokenId> by_string;  // views into `tokens`
  MergeTable merges;                                        // key: pair_key(left, right)
  std::vector<TokenId> byte_token;                          // id of each single-byte token
  // Special tokens grouped by their first byte, longest first within a group.
  std::vector<std::vector<TokenId>> specials_by_first_byte;
  SpecialIds ids;
  ByteLevel byte_level;

  static uint64_t pair_key(TokenId a, TokenId b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
};

// Builds the vocabulary from tokenizer.ggml.tokens, tokenizer.ggml.merges and (optional)
// tokenizer.ggml.token_type. Every problem is an invalid_model Status naming the key and entry.
Status load_vocab(const gguf::Reader& file, Vocab* out);

}  // namespace ds4::tokenizer
