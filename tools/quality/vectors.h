// tools/quality/vectors.h: the logprob vector format of DeepSeek's official continuations
// (../shared/fixtures/official-vectors/official.vec, "ds4-official-logprob-vectors-v1"): per case
// a prompt file and greedy steps, each with the chosen token's bytes and the top alternatives'
// bytes and logprobs. Lines:
//   # comment                               (and blank lines)
//   case ID CTX STEPS PROMPT_FILE
//   step INDEX SELECTED_HEX TOPN            (STEPS of them, INDEX 0, 1, ...)
//   top TOKEN_HEX LOGPROB                   (TOPN after each step)
//   end
// Owns: parsing (every malformed line refused with its number: hostile files included) and
// writing that format. Does not own: scoring (score.h), where the prompt files are (the caller).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ds4/status.h"

namespace ds4::quality {

struct VectorStep {
  std::string selected;                             // the chosen token's bytes
  std::vector<std::pair<std::string, double>> top;  // alternatives' bytes and logprobs
};

struct VectorCase {
  std::string id;
  int ctx = 0;
  std::string prompt_file;
  std::vector<VectorStep> steps;
};

// Limits a file must keep (a hostile file is refused, never allocated for).
inline constexpr int kMaxSteps = 1 << 16;
inline constexpr int kMaxTop = 1024;
inline constexpr size_t kMaxTokenBytes = 256;

Result<std::vector<VectorCase>> parse_vectors(std::string_view text);
// The format above, logprobs with 17 significant digits (a double reads back exactly).
std::string write_vectors(const std::vector<VectorCase>& cases);
// Bytes as lowercase hex digits (the format's token spelling).
std::string to_hex(std::string_view bytes);

}  // namespace ds4::quality
