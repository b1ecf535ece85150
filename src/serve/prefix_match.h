// src/serve/prefix_match.h: which part of a request's prompt a live session already holds
// (features.md §1.13, the memory-token and memory-text rules).
// Owns: the choice of the effective prompt: the request's own tokens when the live tokens are a
// token prefix of them, else the live tokens plus the tokenized rest of the rendered text when the
// live tokens' decoded text is a byte prefix of it (BPE may spell a continued transcript
// differently), else the request's tokens unchanged (a miss).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ds4/tokenizer.h"
#include "serve/request.h"

namespace ds4::serve {

// kVisible: the session's visible-transcript binding (features.md §1.13 rules 1 and 6); kDisk:
// loaded from a cache file.
enum class CacheSource { kMiss, kTokens, kText, kVisible, kDisk };
const char* to_string(CacheSource source);

struct PromptPlan {
  std::vector<TokenId> tokens;  // the prompt to sync the session to
  CacheSource source = CacheSource::kMiss;
  size_t reusable = 0;  // leading tokens of `tokens` equal to the live ones
};

size_t common_prefix(std::span<const TokenId> a, std::span<const TokenId> b);

PromptPlan plan_prompt(std::span<const TokenId> live, const Tokenizer& tok, const Request& request);
// The same, with the decoded text of `live` from `decoded` (called at most once, and only when the
// token rule fails), so a caller that keeps each session's text need not decode it again.
PromptPlan plan_prompt(std::span<const TokenId> live, const Tokenizer& tok, const Request& request,
                       const std::function<const std::string&()>& decoded);

}  // namespace ds4::serve
