// src/agent/turn_text.cpp: a user turn, rendered alone and cut after the conversation's start.
#include "agent/turn_text.h"

#include <string>
#include <string_view>

namespace ds4::agent {

Result<std::vector<TokenId>> user_turn_tokens(const Tokenizer& tok, const PromptMode& mode,
                                              std::span<const chat::ContentBlock> blocks) {
  chat::RenderOptions ro;
  ro.think = mode.think;
  ro.context_size = mode.context_size;
  // What every rendering starts with (BOS and the think-mode prefix): already in the transcript.
  DS4_ASSIGN_OR_RETURN(chat::RenderedPrompt start,
                       chat::render_prompt({}, ro, chat::Template::kOfficial));
  chat::Message user{.role = chat::Role::kUser};
  user.blocks.assign(blocks.begin(), blocks.end());
  DS4_ASSIGN_OR_RETURN(chat::RenderedPrompt full,
                       chat::render_prompt({&user, 1}, ro, chat::Template::kOfficial));
  if (!std::string_view(full.text).starts_with(start.text)) {
    return Status::internal("a rendered user turn does not start like an empty conversation");
  }
  const size_t cut = start.text.size();
  std::vector<TextRange> plain;
  for (const TextRange& r : full.plain) {
    if (r.end <= cut) continue;
    plain.push_back({r.begin > cut ? r.begin - cut : 0, r.end - cut});
  }
  std::vector<TokenId> out;
  tok.encode_rendered(std::string_view(full.text).substr(cut), plain, &out);
  return out;
}

}  // namespace ds4::agent
