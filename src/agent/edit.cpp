// src/agent/edit.cpp: range selection, replacement and reporting of the edit tool.
#include "agent/edit.h"

#include <algorithm>
#include <vector>

#include "agent/file_io.h"

namespace ds4::agent {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f'; }

bool has_non_blank(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return !is_blank(c); });
}

// Every position where `needle` starts in `hay`, overlapping ones included (a match that
// overlaps another still makes the selection ambiguous); counting stops at `limit`.
size_t count_matches(std::string_view hay, std::string_view needle, size_t* first,
                     size_t limit = SIZE_MAX) {
  size_t n = 0;
  for (size_t pos = hay.find(needle); pos != std::string_view::npos;
       pos = hay.find(needle, pos + 1)) {
    if (n == 0 && first) *first = pos;
    if (++n >= limit) break;
  }
  return n;
}

// A line of `old` that holds only the marker (and blanks).
struct UptoLine {
  size_t begin = 0;  // first byte of the line
  size_t end = 0;    // one past its '\n' (or the end of `old`)
};

std::vector<UptoLine> find_upto_lines(std::string_view old) {
  std::vector<UptoLine> lines;
  size_t begin = 0;
  while (begin < old.size()) {
    size_t nl = old.find('\n', begin);
    const size_t end = nl == std::string_view::npos ? old.size() : nl + 1;
    std::string_view line =
        old.substr(begin, (nl == std::string_view::npos ? old.size() : nl) - begin);
    while (!line.empty() && is_blank(line.front())) line.remove_prefix(1);
    while (!line.empty() && is_blank(line.back())) line.remove_suffix(1);
    if (line == kUptoMarker) lines.push_back({begin, end});
    begin = end;
  }
  return lines;
}

std::string times(size_t n) { return std::to_string(n) + (n == 1 ? " time" : " times"); }

Result<EditRange> select_anchored(std::string_view content, std::string_view old, UptoLine upto,
                                  const std::string& shown) {
  const std::string_view head = old.substr(0, upto.begin);
  std::string_view tail = old.substr(upto.end);
  while (!tail.empty() && (tail.front() == '\n' || tail.front() == '\r')) tail.remove_prefix(1);
  if (!has_non_blank(head))
    return Status::invalid_argument(
        "edit: the head anchor before [upto] is empty; start old with the first lines of the "
        "block to replace");
  if (!has_non_blank(tail))
    return Status::invalid_argument(
        "edit: the tail anchor after [upto] is empty; end old with the last lines of the block "
        "to replace (never end old right after [upto])");
  size_t head_at = 0;
  const size_t heads = count_matches(content, head, &head_at);
  if (heads == 0)
    return Status::not_found(
        "edit: the head anchor (the lines before [upto]) was not found in %s; it must match the "
        "file exactly, whitespace included",
        shown.c_str());
  if (heads > 1)
    return Status::invalid_argument(
        "edit: the head anchor (the lines before [upto]) matches %s in %s; add lines to make it "
        "unique",
        times(heads).c_str(), shown.c_str());
  const size_t after_head = head_at + head.size();
  size_t tail_at = 0;
  const size_t tails = count_matches(content.substr(after_head), tail, &tail_at);
  if (tails == 0)
    return Status::not_found(
        "edit: the tail anchor (the lines after [upto]) was not found after the head in %s",
        shown.c_str());
  if (tails > 1)
    return Status::invalid_argument(
        "edit: the tail anchor (the lines after [upto]) matches %s after the head in %s; add "
        "lines to make it unique (avoid generic tails such as a lone closing brace)",
        times(tails).c_str(), shown.c_str());
  return EditRange{head_at, after_head + tail_at + tail.size(), /*anchored=*/true};
}

// 1-based number of the line holding byte `offset`.
size_t line_of(std::string_view text, size_t offset) {
  return 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
}

std::string range_text(size_t first, size_t last) {
  return first == last ? "line " + std::to_string(first)
                       : "lines " + std::to_string(first) + "-" + std::to_string(last);
}

// Numbered lines of the edited file around the new region [first, last] (1-based, inclusive).
std::string context_lines(std::string_view text, size_t first, size_t last) {
  const std::vector<size_t> starts = line_starts(text);
  if (starts.empty()) return "(the file is now empty)\n";
  const size_t total = starts.size();
  const size_t lo = first > static_cast<size_t>(kEditContextLines) ? first - kEditContextLines : 1;
  const size_t hi = std::min(total, last + kEditContextLines);
  const bool elide = last + 1 - first > static_cast<size_t>(kEditShownWholeLines);
  std::string out;
  for (size_t n = lo; n <= hi; ++n) {
    if (elide && n == first + kEditShownEdgeLines) {
      out += "...\n";
      n = last - kEditShownEdgeLines;
      continue;
    }
    out += std::to_string(n) + " ";
    out += line_at(text, starts, n);
    out += '\n';
  }
  return out;
}

std::string edit_report(const EditRequest& req, std::string_view before, std::string_view after,
                        const EditRange& r) {
  const size_t old_first = line_of(before, r.begin);
  const size_t old_last = line_of(before, r.end - 1);
  std::string out = "Edited " + req.path + " using " +
                    (r.anchored ? "anchored old/new replacement" : "old/new replacement") + "\n";
  size_t new_last = old_first;
  if (req.new_text.empty()) {
    out += "Removed old " + range_text(old_first, old_last) + ".\n";
  } else {
    new_last = line_of(after, r.begin + req.new_text.size() - 1);
    out += "Replaced old " + range_text(old_first, old_last) + " (now " +
           range_text(old_first, new_last) + ").\n";
  }
  const auto old_breaks =
      static_cast<long long>(std::count(before.begin() + r.begin, before.begin() + r.end, '\n'));
  const auto new_breaks =
      static_cast<long long>(std::count(req.new_text.begin(), req.new_text.end(), '\n'));
  const long long shift = new_breaks - old_breaks;
  if (shift != 0)
    out += "Lines after old line " + std::to_string(old_last) + " moved " +
           (shift > 0 ? "down" : "up") + " by " + std::to_string(shift > 0 ? shift : -shift) +
           "; line numbers from earlier reads past that point are stale.\n";
  out += "Context after the edit:\n";
  out += context_lines(after, old_first, new_last);
  return out;
}

}  // namespace

Result<EditRange> select_edit_range(std::string_view content, std::string_view old,
                                    std::string_view shown) {
  const std::string name(shown);
  if (old.empty()) return Status::invalid_argument("edit: old must not be empty");
  const std::vector<UptoLine> uptos = find_upto_lines(old);
  if (uptos.size() > 1)
    return Status::invalid_argument(
        "edit: old has %zu [upto] lines; use exactly one, between a unique head and a unique "
        "tail",
        uptos.size());
  if (uptos.size() == 1) return select_anchored(content, old, uptos[0], name);
  size_t at = 0;
  const size_t n = count_matches(content, old, &at);
  if (n == 0)
    return Status::not_found(
        "edit: old was not found in %s; it must match the file exactly, whitespace included "
        "(read the lines again, or use an [upto] anchor)",
        name.c_str());
  if (n > 1)
    return Status::invalid_argument(
        "edit: old matches %s in %s; include more surrounding lines to make it unique",
        times(n).c_str(), name.c_str());
  return EditRange{at, at + old.size(), /*anchored=*/false};
}

ToolResult edit_file(const Workspace& ws, const EditRequest& req) {
  if (req.path.empty()) return tool_error("edit: path is empty");
  const std::string full = ws.resolve(req.path);
  Result<std::string> loaded = read_file_capped(full, req.path);
  if (!loaded) return tool_error(loaded.status().message());
  const std::string& before = *loaded;
  Result<EditRange> range = select_edit_range(before, req.old_text, req.path);
  if (!range) return tool_error(range.status().message());
  std::string after;
  after.reserve(before.size() - (range->end - range->begin) + req.new_text.size());
  after.append(before, 0, range->begin);
  after += req.new_text;
  after.append(before, range->end);
  Status st = write_file_atomic(full, after, req.path);
  if (!st) return tool_error(st.message());
  return tool_ok(edit_report(req, before, after, *range));
}

Status edit_preflight(const Workspace& ws, std::string_view path, std::string_view old) {
  Result<std::string> loaded = read_file_capped(ws.resolve(path), path);
  if (!loaded) return loaded.status();
  return select_edit_range(*loaded, old, path).status();
}

bool upto_prefix_ready(std::string_view content, std::string_view old_prefix) {
  if (old_prefix.size() < kUptoMinPrefixBytes || old_prefix.back() != '\n') return false;
  if (!find_upto_lines(old_prefix).empty()) return false;
  int lines = 0;
  size_t begin = 0;
  while (begin < old_prefix.size()) {
    const size_t nl = old_prefix.find('\n', begin);
    if (has_non_blank(old_prefix.substr(begin, nl - begin))) ++lines;
    begin = nl + 1;
  }
  return lines >= kUptoMinPrefixLines && count_matches(content, old_prefix, nullptr, 2) == 1;
}

bool upto_prefix_ready(const Workspace& ws, std::string_view path, std::string_view old_prefix) {
  if (old_prefix.size() < kUptoMinPrefixBytes) return false;  // skip the read while too short
  Result<std::string> loaded = read_file_capped(ws.resolve(path), path);
  return loaded && upto_prefix_ready(*loaded, old_prefix);
}

}  // namespace ds4::agent
