// src/agent/approval.h: which tool calls ask the user first (issue 48 item 2): a shell command,
// and a write or edit whose target lies outside the working directory. Everything else (reads,
// searches, listings, edits inside the workspace, job status and stop) runs without asking.
// Owns: that rule and the question's wording; the approval callback's type.
// Does not own: asking (the app: a y/n prompt, --yolo, or --deny-unsafe) or where the working
// directory is (workspace.h).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "agent/dispatch.h"
#include "agent/workspace.h"

namespace ds4::agent {

// What the call would do, as a question's subject ("run a shell command: make test"), or "" when
// it needs no approval.
std::string approval_reason(const Workspace& ws, const ToolCall& call);

// Asked once per call that needs approval; false denies it (the model is told, nothing runs).
using ApproveFn = std::function<bool(const ToolCall& call, std::string_view reason)>;

// The result a denied call gives the model.
ToolResult denied_result(std::string_view reason);

}  // namespace ds4::agent
