// src/agent/tool_context.h: the state the agent's tools share across calls.
// Owns: nothing but the grouping: the workspace (where paths point), the `more` cursor, the
// shell jobs and the callback that interrupts a waiting `bash`.
// Does not own: the tools (file_tools.h, edit.h, search.h, bash_jobs.h) or their dispatch
// (dispatch.h).
//
// One context per agent: tools keep their state here rather than in globals, so a test, or a
// second agent in the same process, starts from a clean slate.
#pragma once

#include <string_view>

#include "agent/bash_jobs.h"
#include "agent/file_tools.h"
#include "agent/workspace.h"

namespace ds4::agent {

struct ToolContextOptions {
  std::string_view workdir = ".";  // see Workspace
  std::string output_dir;          // bash output files; see BashJobsOptions
};

struct ToolContext {
  explicit ToolContext(const ToolContextOptions& options)
      : workspace(options.workdir), jobs({.output_dir = options.output_dir}) {}

  Workspace workspace;
  ReadCursor cursor;
  BashJobs jobs;
  CancelFn cancel;  // polled while `bash` waits (Ctrl+C); empty: never cancelled
};

}  // namespace ds4::agent
