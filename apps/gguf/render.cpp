// apps/gguf/render.cpp: the single-turn chat rendering used by `ds4-gguf tokenize --chat`.
#include "apps/gguf/commands.h"
#include "ds4/chat.h"

namespace ds4::apps::gguf_tool {

Result<std::string> render_user_turn(const std::string& text, const std::string& think) {
  const auto mode = chat::think_mode_from_effort(think);
  if (!mode) return Status::invalid_argument("unknown thinking mode '%s'", think.c_str());
  chat::Message user;
  user.role = chat::Role::kUser;
  user.content = text;
  chat::RenderOptions opts;
  opts.think = *mode;
  // A debugging tool shows what each mode renders to, so Think-Max is not downgraded here.
  opts.context_size = chat::kThinkMaxMinContext;
  const chat::Message messages[] = {user};
  return chat::render(messages, opts);
}

}  // namespace ds4::apps::gguf_tool
