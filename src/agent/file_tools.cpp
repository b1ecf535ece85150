// src/agent/file_tools.cpp: read, more, write and list.
#include "agent/file_tools.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "agent/file_io.h"

namespace ds4::agent {
namespace {

std::string continuation(int64_t next, int64_t remaining, int64_t chunk) {
  return "continue_offset=" + std::to_string(next) +
         "; call more with count=" + std::to_string(std::min(remaining, chunk)) +
         " to read the next chunk";
}

// The shared body of read and more; `from_more` only changes the message of a read past the end.
ToolResult read_lines(const Workspace& ws, const ReadRequest& req, bool from_more,
                      ReadCursor* cursor) {
  if (req.path.empty()) return tool_error("read: path is empty");
  Result<std::string> loaded = read_file_capped(ws.resolve(req.path), req.path);
  if (!loaded) return tool_error(loaded.status().message());
  const std::string& text = *loaded;
  const std::vector<size_t> starts = line_starts(text);
  const auto total = static_cast<int64_t>(starts.size());
  const int64_t first = req.whole ? 1 : std::max<int64_t>(1, req.start_line);
  if (total == 0) {
    *cursor = {true, req.path, 1, req.raw};
    return tool_ok(req.raw ? "[" + req.path + " is empty]\n"
                           : req.path + ": empty file (0 lines)\n");
  }
  if (first > total) {
    if (from_more)
      return tool_error("more: nothing left to read; " + req.path + " has " +
                        std::to_string(total) + " lines and the last read ended at line " +
                        std::to_string(total));
    return tool_error("read: start_line " + std::to_string(first) + " is past the end of " +
                      req.path + " (" + std::to_string(total) + " lines)");
  }
  const int64_t chunk = std::max<int64_t>(1, req.max_lines);
  const int64_t last = req.whole ? total : std::min(total, first + chunk - 1);
  const bool more_left = last < total;
  *cursor = {true, req.path, last + 1, req.raw};

  std::string out;
  if (req.raw) {
    const size_t begin = starts[static_cast<size_t>(first - 1)];
    const size_t end = last < total ? starts[static_cast<size_t>(last)] : text.size();
    out.assign(text, begin, end - begin);
    if (more_left)
      out += "[lines " + std::to_string(first) + "-" + std::to_string(last) + " of " +
             std::to_string(total) + " shown; " + continuation(last + 1, total - last, chunk) +
             "]\n";
    return tool_ok(std::move(out));
  }
  out = req.path + ": lines " + std::to_string(first) + "-" + std::to_string(last) + " of " +
        std::to_string(total);
  if (more_left) out += "; " + continuation(last + 1, total - last, chunk);
  out += '\n';
  for (int64_t n = first; n <= last; ++n) {
    out += std::to_string(n);
    out += ' ';
    out += line_at(text, starts, static_cast<size_t>(n));
    out += '\n';
  }
  return tool_ok(std::move(out));
}

char type_letter(mode_t mode) {
  if (S_ISDIR(mode)) return 'd';
  if (S_ISLNK(mode)) return 'l';
  if (S_ISREG(mode)) return '-';
  return '?';
}

}  // namespace

ToolResult read_file(const Workspace& ws, const ReadRequest& req, ReadCursor* cursor) {
  return read_lines(ws, req, /*from_more=*/false, cursor);
}

ToolResult read_more(const Workspace& ws, int64_t count, ReadCursor* cursor) {
  if (!cursor->valid) return tool_error("more: there is no previous read to continue (use read)");
  ReadRequest req{.path = cursor->path,
                  .start_line = cursor->next_line,
                  .max_lines = count,
                  .raw = cursor->raw};
  return read_lines(ws, req, /*from_more=*/true, cursor);
}

ToolResult write_file(const Workspace& ws, std::string_view path, std::string_view content) {
  if (path.empty()) return tool_error("write: path is empty");
  Status st = write_file_atomic(ws.resolve(path), content, path);
  if (!st) return tool_error(st.message());
  return tool_ok("Wrote " + std::to_string(content.size()) + " bytes to " + std::string(path));
}

ToolResult list_dir(const Workspace& ws, std::string_view path) {
  const std::string shown = path.empty() ? "." : std::string(path);
  const std::string dir = ws.resolve(shown);
  DIR* d = ::opendir(dir.c_str());
  if (!d) return tool_error("cannot list " + shown + ": " + std::strerror(errno));
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());

  std::string out = shown + ":\n";
  if (names.empty()) out += "(empty)\n";
  const size_t shown_count = std::min(names.size(), kMaxListEntries);
  for (size_t i = 0; i < shown_count; ++i) {
    struct stat st;
    const bool known = ::lstat((dir + "/" + names[i]).c_str(), &st) == 0;
    const char type = known ? type_letter(st.st_mode) : '?';
    out += type;
    out += ' ';
    out += std::to_string(known ? static_cast<long long>(st.st_size) : 0LL);
    out += ' ';
    out += names[i];
    if (type == 'd') out += '/';
    out += '\n';
  }
  if (names.size() > shown_count) out += "... more entries omitted ...\n";
  return tool_ok(std::move(out));
}

}  // namespace ds4::agent
