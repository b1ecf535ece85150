#include "apps/gguf/commands.h"
namespace ds4::apps::gguf_tool {
Result<std::string> render_user_turn(const std::string&, const std::string&) {
  return Status::unimplemented("chat");
}
}  // namespace ds4::apps::gguf_tool
