// src/tokenizer/bpe.h: byte-level BPE of one pre-tokenized piece, with a bounded cache.
// Owns: the merge loop (lowest rank first, leftmost among equal ranks) and the piece cache.
// Does not own: the vocabulary (vocab.h) or how text is split into pieces.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/vocab.h"

namespace ds4::tokenizer {

class BpeEncoder {
 public:
  explicit BpeEncoder(const Vocab& vocab) : vocab_(vocab) {}

  // Appends the ids of one piece (raw bytes, any content) to `out`. Thread-safe.
  void encode_piece(std::string_view piece, std::vector<TokenId>* out) const;

 private:
  void merge(std::string_view piece, std::vector<TokenId>* out) const;
  void merge_short(std::string_view piece, std::vector<TokenId>* out) const;

  static constexpr size_t kShortPiece = 32;  // pieces up to this many bytes use array scans
  static constexpr size_t kCacheMaxEntries = 1 << 17;
  static constexpr size_t kCacheMaxPieceBytes = 64;  // long pieces are rare; don't let them evict

  struct PieceHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  const Vocab& vocab_;
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, std::vector<TokenId>, PieceHash, std::equal_to<>>
      cache_;  // guarded by mu_
};

}  // namespace ds4::tokenizer
