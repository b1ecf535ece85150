// src/agent/file_tools.h: the agent's read, more, write and list tools (features.md §5.3, and the
// reading protocol of §5.2: 500-line chunks continued with `more`).
// Owns: each tool's output format and the `more` cursor (which file, which line, which mode).
// Does not own: path resolution (workspace.h), loading and saving bytes (file_io.h), edits
// (edit.h), searches (search.h) or parameter parsing (dispatch.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "agent/tool_args.h"
#include "agent/workspace.h"

namespace ds4::agent {

// The chunk the system prompt promises: enough to see a function whole, small enough that a
// few reads fit in the context with room to work.
inline constexpr int64_t kDefaultReadLines = 500;
// The largest chunk one read or more may ask for (whole=true has no limit but the byte cap).
inline constexpr int64_t kMaxReadLines = 100000;
// Entries `list` shows before it stops: more is a listing to narrow with search or bash.
inline constexpr size_t kMaxListEntries = 300;

// Where the last successful read stopped; `more` continues from there in the same mode.
struct ReadCursor {
  bool valid = false;
  std::string path;  // as the model wrote it
  int64_t next_line = 1;
  bool raw = false;
};

struct ReadRequest {
  std::string path;
  int64_t start_line = 1;
  int64_t max_lines = kDefaultReadLines;
  bool whole = false;  // the whole file, start_line and max_lines ignored
  bool raw = false;    // bytes verbatim instead of numbered lines
};

// Decorated: "PATH: lines a-b of N" (plus "; continue_offset=K; call more with count=M to read
// the next chunk" when lines remain), then each line as "<n> text". Raw: the bytes of lines a-b
// verbatim, and a bracketed note when lines remain. Sets `cursor` on success.
ToolResult read_file(const Workspace& ws, const ReadRequest& req, ReadCursor* cursor);
// Continues the cursor's read with `count` more lines.
ToolResult read_more(const Workspace& ws, int64_t count, ReadCursor* cursor);
// "Wrote N bytes to PATH" (file_io.h says how: atomically, parents created).
ToolResult write_file(const Workspace& ws, std::string_view path, std::string_view content);
// "PATH:" then one "type size name" line per entry, sorted by name, directories with a '/'.
ToolResult list_dir(const Workspace& ws, std::string_view path);

}  // namespace ds4::agent
