// src/agent/search.h: the agent's search tool, a recursive grep over the workspace (features.md
// §5.3 `search`).
// Owns: the walk (sorted, depth-limited, .git and binary files skipped), the matchers (literal or
// POSIX extended regex, either case) and the output format.
// Does not own: path resolution (workspace.h) or parameter parsing (dispatch.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "agent/tool_args.h"
#include "agent/workspace.h"

namespace ds4::agent {

// Directory levels below the search root that are still entered: deep enough for any source
// tree, shallow enough that a pathological nesting cannot run away.
inline constexpr int kMaxSearchDepth = 24;
inline constexpr int64_t kDefaultSearchResults = 50;
inline constexpr int64_t kMaxSearchResults = 500;
inline constexpr int64_t kMaxSearchContext = 5;
// A longer matching line (minified code, data) is cut here so one hit cannot flood the context.
inline constexpr size_t kMaxShownLineBytes = 400;

struct SearchRequest {
  std::string query;
  std::string path = ".";
  std::string mode = "literal";  // "literal" or "regex" (POSIX extended)
  std::string glob;              // fnmatch pattern on the base name or the relative path
  int64_t context = 0;           // lines shown before and after each match, 0..5
  int64_t max_results = kDefaultSearchResults;
  bool case_sensitive = true;
};

// "N matches shown", then per file its path and "  <line> text" for each matching line (context
// lines as "  <line>- text", "  --" between separate groups), a blank line between files; or
// "No matches". Files are visited in sorted path order, so the output is deterministic.
ToolResult search_files(const Workspace& ws, const SearchRequest& req);

}  // namespace ds4::agent
