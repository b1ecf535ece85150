// src/agent/search.cpp: the search tool's walk, matchers and report.
#include "agent/search.h"

#include <dirent.h>
#include <fnmatch.h>
#include <regex.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "agent/file_io.h"

namespace ds4::agent {
namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lowered(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), lower);
  return out;
}

// One compiled query: a literal substring (ASCII case folding when insensitive) or a POSIX ERE.
class Matcher {
 public:
  Matcher() = default;
  Matcher(const Matcher&) = delete;
  Matcher& operator=(const Matcher&) = delete;
  ~Matcher() {
    if (compiled_) ::regfree(&re_);
  }

  // An empty string on success, else the reason the query is unusable.
  std::string init(const SearchRequest& req) {
    if (req.mode == "literal") {
      folded_ = !req.case_sensitive;
      literal_ = folded_ ? lowered(req.query) : req.query;
      return {};
    }
    if (req.mode != "regex")
      return "search: unknown mode '" + req.mode + "' (use literal or regex)";
    const int flags = REG_EXTENDED | REG_NOSUB | (req.case_sensitive ? 0 : REG_ICASE);
    const int rc = ::regcomp(&re_, req.query.c_str(), flags);
    if (rc != 0) {
      char why[256];
      ::regerror(rc, &re_, why, sizeof why);
      return "search: invalid regex '" + req.query + "': " + why;
    }
    compiled_ = true;
    is_regex_ = true;
    return {};
  }

  bool matches(std::string_view line) {
    if (!is_regex_) {
      if (!folded_) return line.find(literal_) != std::string_view::npos;
      scratch_.assign(line);
      std::transform(scratch_.begin(), scratch_.end(), scratch_.begin(), lower);
      return scratch_.find(literal_) != std::string::npos;
    }
    scratch_.assign(line);  // regexec needs a terminated string; binary files (NULs) are skipped
    return ::regexec(&re_, scratch_.c_str(), 0, nullptr, 0) == 0;
  }

 private:
  bool is_regex_ = false;
  bool folded_ = false;
  bool compiled_ = false;
  std::string literal_;
  std::string scratch_;
  regex_t re_{};
};

struct Walk {
  const SearchRequest& req;
  Matcher& matcher;
  size_t shown = 0;
  bool more_exist = false;  // a match beyond max_results was seen
  std::string body;
};

// A line cut at kMaxShownLineBytes without splitting a UTF-8 character, CR of CRLF dropped.
std::string shown_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() <= kMaxShownLineBytes) return std::string(line);
  size_t cut = kMaxShownLineBytes;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
  return std::string(line.substr(0, cut)) + " [...]";
}

void search_file(Walk& w, const std::string& full, const std::string& shown) {
  Result<std::string> loaded = read_file_capped(full, shown);
  if (!loaded) return;  // unreadable or over the cap: not text to search
  const std::string& text = *loaded;
  if (std::memchr(text.data(), '\0', text.size())) return;  // binary
  const std::vector<size_t> starts = line_starts(text);
  std::vector<size_t> hits;
  for (size_t n = 1; n <= starts.size(); ++n) {
    if (!w.matcher.matches(line_at(text, starts, n))) continue;
    if (w.shown + hits.size() == static_cast<size_t>(w.req.max_results)) {
      w.more_exist = true;
      break;
    }
    hits.push_back(n);
  }
  if (hits.empty()) return;
  if (w.shown > 0) w.body += '\n';
  w.body += shown + '\n';
  const auto ctx = static_cast<size_t>(w.req.context);
  size_t printed_to = 0;  // last line number printed in this file
  for (size_t i = 0; i < hits.size(); ++i) {
    const size_t from = std::max(hits[i] > ctx ? hits[i] - ctx : 1, printed_to + 1);
    const size_t to = std::min(starts.size(), hits[i] + ctx);
    if (ctx > 0 && printed_to > 0 && from > printed_to + 1) w.body += "  --\n";
    for (size_t n = from; n <= to; ++n) {
      const bool is_hit = std::binary_search(hits.begin(), hits.end(), n);
      w.body += "  " + std::to_string(n) + (is_hit ? " " : "- ");
      w.body += shown_line(line_at(text, starts, n));
      w.body += '\n';
    }
    printed_to = std::max(printed_to, to);
  }
  w.shown += hits.size();
}

bool glob_accepts(const std::string& glob, std::string_view name, const std::string& rel,
                  const std::string& shown) {
  if (glob.empty()) return true;
  const std::string base(name);
  return ::fnmatch(glob.c_str(), base.c_str(), 0) == 0 ||
         ::fnmatch(glob.c_str(), rel.c_str(), 0) == 0 ||
         ::fnmatch(glob.c_str(), shown.c_str(), 0) == 0;
}

std::vector<std::string> sorted_entries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return names;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name != "." && name != ".." && name != ".git") names.emplace_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool limit_reached(const Walk& w) { return w.more_exist; }

// `rel` is the path below the search root ("" at the root); `shown` what the output prints.
void walk_dir(Walk& w, const std::string& full, const std::string& rel, const std::string& shown,
              int depth) {
  for (const std::string& name : sorted_entries(full)) {
    if (limit_reached(w)) return;
    const std::string child = full + "/" + name;
    const std::string child_rel = rel.empty() ? name : rel + "/" + name;
    const std::string child_shown = shown.empty() ? name : shown + "/" + name;
    struct stat st;
    if (::lstat(child.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if (depth < kMaxSearchDepth) walk_dir(w, child, child_rel, child_shown, depth + 1);
      continue;
    }
    // A symlink is searched when it names a regular file; symlinked directories are not
    // entered, so a link cycle cannot loop the walk.
    if (S_ISLNK(st.st_mode) && (::stat(child.c_str(), &st) != 0 || !S_ISREG(st.st_mode))) continue;
    if (!S_ISREG(st.st_mode)) continue;
    if (!glob_accepts(w.req.glob, name, child_rel, child_shown)) continue;
    search_file(w, child, child_shown);
  }
}

// The prefix printed before paths below the root: none for ".", else the root without a '/'.
std::string shown_root(std::string_view path) {
  std::string s(path);
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s == "." ? std::string() : s;
}

}  // namespace

ToolResult search_files(const Workspace& ws, const SearchRequest& req_in) {
  if (req_in.query.empty()) return tool_error("search: query is empty");
  SearchRequest req = req_in;
  if (req.path.empty()) req.path = ".";
  req.context = std::clamp<int64_t>(req.context, 0, kMaxSearchContext);
  req.max_results = std::clamp<int64_t>(req.max_results, 1, kMaxSearchResults);
  Matcher matcher;
  if (std::string why = matcher.init(req); !why.empty()) return tool_error(why);

  const std::string root = ws.resolve(req.path);
  struct stat st;
  if (::stat(root.c_str(), &st) != 0)
    return tool_error("search: cannot access " + req.path + ": " + std::strerror(errno));
  Walk w{req, matcher};
  if (S_ISDIR(st.st_mode)) {
    walk_dir(w, root, "", shown_root(req.path), 1);
  } else {
    const std::string name = root.substr(root.find_last_of('/') + 1);
    if (glob_accepts(req.glob, name, name, req.path)) search_file(w, root, req.path);
  }
  if (w.shown == 0) return tool_ok("No matches\n");
  std::string out = std::to_string(w.shown) + " matches shown";
  if (w.more_exist) out += " (max_results reached; more matches exist: narrow the search)";
  out += "\n";
  return tool_ok(out + w.body);
}

}  // namespace ds4::agent
