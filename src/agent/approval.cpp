// src/agent/approval.cpp: the approval rule.
#include "agent/approval.h"

namespace ds4::agent {

std::string approval_reason(const Workspace& ws, const ToolCall& call) {
  if (call.name == "bash") {
    const std::string* cmd = find_param(call.params, "command");
    return "run a shell command: " + (cmd ? *cmd : std::string());
  }
  if (call.name == "write" || call.name == "edit") {
    const std::string* path = find_param(call.params, "path");
    if (path && ws.outside_workdir(*path)) return "write outside the working directory: " + *path;
  }
  return {};
}

ToolResult denied_result(std::string_view reason) {
  return tool_error("the user did not allow this (" + std::string(reason) +
                    "); nothing was run. Continue without it or ask the user.");
}

}  // namespace ds4::agent
