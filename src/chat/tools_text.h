// src/chat/tools_text.h: the pieces of the tools block that DeepSeek's reference encoder and
// ds4-server's template share (data, byte-exact): the DSML example and the thinking rule that
// ends with the schema heading. Each renderer writes its own first and closing sentences.
#pragma once

#include <string_view>

namespace ds4::chat {

inline constexpr std::string_view kToolsExample =
    "<｜DSML｜tool_calls>\n"
    "<｜DSML｜invoke name=\"$TOOL_NAME\">\n"
    "<｜DSML｜parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE"
    "</｜DSML｜parameter>\n"
    "...\n"
    "</｜DSML｜invoke>\n"
    "<｜DSML｜invoke name=\"$TOOL_NAME2\">\n"
    "...\n"
    "</｜DSML｜invoke>\n"
    "</｜DSML｜tool_calls>\n\n";

inline constexpr std::string_view kToolsThinkingRule =
    "If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning "
    "inside <think>...</think> BEFORE any tool calls or final response.\n\n"
    "Otherwise, output directly after </think> with tool calls or final response.\n\n"
    "### Available Tool Schemas\n\n";

}  // namespace ds4::chat
