// src/agent/file_io.h: whole-file reads with a size cap and crash-safe whole-file writes, shared
// by the agent's file tools (read, write, edit, search).
// Owns: the 16 MiB read limit, line indexing of a loaded file, and the temporary-file-plus-rename
// write (a crash leaves either the old file or the new one, never half of one).
// Does not own: where paths point (workspace.h) or how contents are shown (the tools).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "ds4/status.h"

namespace ds4::agent {

// A file larger than this is data, not text to page through or edit in place; the cap also
// bounds the memory one tool call can take (the agent keeps a loaded file only for the call).
inline constexpr size_t kMaxReadBytes = size_t{16} << 20;

// Reads the regular file at `path` whole. Errors (naming `shown`, the path as the model wrote it):
// missing, a directory, not a regular file, over kMaxReadBytes, or an I/O failure.
Result<std::string> read_file_capped(const std::string& path, std::string_view shown);

// Replaces the contents of `path` with `content`. The bytes go to a new file in the same
// directory, are flushed to disk, and the new file is renamed over the old one. Missing parent
// directories are created (a new source file in a new folder is a single write call). An
// existing file keeps its permission bits; a symlink keeps pointing at the file it names, which
// is the one rewritten. Hard links to the old file keep the old contents (rename breaks them).
Status write_file_atomic(const std::string& path, std::string_view content, std::string_view shown);

// Start offsets of the lines of `text`: one per line, a final line without '\n' included, no
// empty line after a trailing '\n' (so "a\nb\n" has two lines and "" has none).
std::vector<size_t> line_starts(std::string_view text);

// Line `n` (1-based) of `text` without its '\n', given line_starts(text).
std::string_view line_at(std::string_view text, const std::vector<size_t>& starts, size_t n);

}  // namespace ds4::agent
