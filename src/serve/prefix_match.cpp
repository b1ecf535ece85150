// src/serve/prefix_match.cpp: token-prefix first, rendered-byte prefix second.
#include "serve/prefix_match.h"

#include <string_view>

namespace ds4::serve {

const char* to_string(CacheSource source) {
  switch (source) {
    case CacheSource::kMiss: return "miss";
    case CacheSource::kTokens: return "tokens";
    case CacheSource::kText: return "text";
    case CacheSource::kVisible: return "visible";
    case CacheSource::kDisk: return "disk";
  }
  return "?";
}

size_t common_prefix(std::span<const TokenId> a, std::span<const TokenId> b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

PromptPlan plan_prompt(std::span<const TokenId> live, const Tokenizer& tok,
                       const Request& request) {
  std::string text;
  return plan_prompt(live, tok, request, [&]() -> const std::string& {
    text = tok.decode(live);
    return text;
  });
}

PromptPlan plan_prompt(std::span<const TokenId> live, const Tokenizer& tok, const Request& request,
                       const std::function<const std::string&()>& live_text) {
  PromptPlan plan;
  const size_t common = common_prefix(live, request.prompt);
  if (!live.empty() && common == live.size()) {
    plan.tokens = request.prompt;
    plan.source = CacheSource::kTokens;
    plan.reusable = common;
    return plan;
  }
  if (!live.empty() && !request.rendered.empty()) {
    const std::string& decoded = live_text();
    if (std::string_view(request.rendered).starts_with(decoded)) {
      plan.tokens.assign(live.begin(), live.end());
      append_rendered_tokens(tok, request, decoded.size(), &plan.tokens);
      plan.source = CacheSource::kText;
      plan.reusable = live.size();
      return plan;
    }
  }
  plan.tokens = request.prompt;
  plan.reusable = common;
  return plan;
}

}  // namespace ds4::serve
