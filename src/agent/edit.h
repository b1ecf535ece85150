// src/agent/edit.h: the agent's edit tool, its preflight and the `[upto]` auto-forcer's test
// (features.md §5.2 editing protocol, §5.3 `edit`, §5.5 auto-forcer and edit preflight).
// Owns: how `old` selects one range of a file (an exact unique match, or a unique head, one
// `[upto]` line and a tail unique after the head), the replacement, and the edit report.
// Does not own: when the agent loop runs the preflight or forces `[upto]` (the loop decides on
// the streamed DSML), file access (file_io.h) or path resolution (workspace.h).
//
// The anchored form exists because decoding is slow: to replace a 200-line block the model
// writes its first lines, `[upto]` and its last lines instead of retyping all 200.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "agent/tool_args.h"
#include "agent/workspace.h"
#include "ds4/status.h"

namespace ds4::agent {

// The marker line of the anchored form. Blanks around it on its line are allowed.
inline constexpr std::string_view kUptoMarker = "[upto]";

// The auto-forcer waits for at least this much of `old`: shorter prefixes are rarely unique
// enough to stand as a head, and forcing too early would cut off a block the model meant to
// match exactly.
inline constexpr size_t kUptoMinPrefixBytes = 64;
// ...and for at least this many lines with a non-blank character, so one long line (a generic
// statement) never becomes the whole head.
inline constexpr int kUptoMinPrefixLines = 2;

// Lines of unchanged text shown around an edit, and the largest new region shown whole (longer
// ones show their first and last kEditShownEdgeLines with "..." between).
inline constexpr int kEditContextLines = 2;
inline constexpr int kEditShownWholeLines = 10;
inline constexpr int kEditShownEdgeLines = 4;

// The byte range [begin, end) of the file that `old` selects.
struct EditRange {
  size_t begin = 0;
  size_t end = 0;
  bool anchored = false;  // selected through `[upto]`
};

// Selects the one range `old` names in `content`, or says why it cannot (empty `old` or anchor,
// more than one `[upto]`, not found, or found N times); `shown` names the file in messages.
Result<EditRange> select_edit_range(std::string_view content, std::string_view old,
                                    std::string_view shown);

struct EditRequest {
  std::string path;
  std::string old_text;
  std::string new_text;
};

// Replaces the selected range with `new_text` and reports: "Edited PATH using old/new
// replacement" (or "anchored old/new replacement"), the old line range and where it is now, a
// note on how later lines moved when the line count changed, then numbered context lines.
ToolResult edit_file(const Workspace& ws, const EditRequest& req);

// Preflight, once `old` is complete and before the model spends tokens on `new`: OK when `old`
// selects exactly one range of the file, otherwise the error the edit would give.
Status edit_preflight(const Workspace& ws, std::string_view path, std::string_view old);

// The auto-forcer's test on the part of `old` streamed so far: at least kUptoMinPrefixBytes
// bytes, at least kUptoMinPrefixLines non-blank lines, ending with a line break, no `[upto]` line
// yet, and matching exactly once in `content`. When true the agent feeds "[upto]\n" so the model
// writes only the tail anchor.
bool upto_prefix_ready(std::string_view content, std::string_view old_prefix);
// The same on the file at `path` (false when it cannot be read).
bool upto_prefix_ready(const Workspace& ws, std::string_view path, std::string_view old_prefix);

}  // namespace ds4::agent
