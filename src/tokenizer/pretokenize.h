// src/tokenizer/pretokenize.h: DeepSeek's pre-tokenizer -- the split of text into pieces that BPE
// then encodes independently.
// Owns: a hand-written equivalent of the three regex splits in DeepSeek V3/V4's tokenizer.json,
// applied in sequence with "Isolated" behaviour (matches and the gaps between them are pieces):
//   1. \p{N}{1,3}
//   2. [\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+
//   3. [!-/:-@[-`{-~][A-Za-z]+ | [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ | ' '?[\p{P}\p{S}]+[\r\n]*
//      | \s*[\r\n]+ | \s+(?!\S) | \s+
// with the leftmost-first alternation and backtracking semantics of the reference regex engine.
// Each later split sees only one piece of the earlier one, so lookahead stops at piece ends.
// Does not own: byte-level mapping or BPE (bpe.cpp), special tokens (tokenizer.cpp).
#pragma once

#include <string_view>
#include <vector>

namespace ds4::tokenizer {

// Appends the pieces of `text` to `out`, in order; their concatenation is exactly `text`.
// Invalid UTF-8 bytes are kept (each is a one-byte character of no class).
void pretokenize(std::string_view text, std::vector<std::string_view>* out);

}  // namespace ds4::tokenizer
