// src/agent/tool_context.h: the state the agent's tools share across calls.
// Owns: nothing but the grouping: the workspace (where paths point) and the `more` cursor.
// Does not own: the tools (file_tools.h, edit.h, search.h) or their dispatch (dispatch.h).
//
// One context per agent: tools keep their state here rather than in globals, so a test, or a
// second agent in the same process, starts from a clean slate.
#pragma once

#include <string_view>

#include "agent/file_tools.h"
#include "agent/workspace.h"

namespace ds4::agent {

struct ToolContextOptions {
  std::string_view workdir = ".";  // see Workspace
};

struct ToolContext {
  explicit ToolContext(const ToolContextOptions& options) : workspace(options.workdir) {}

  Workspace workspace;
  ReadCursor cursor;
};

}  // namespace ds4::agent
