// src/agent/session_store.cpp: ds4-agent's session directory (see session_store.h).
#include "agent/session_store.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "agent/session_io.h"
#include "kv/snapshot.h"

namespace ds4::agent {
namespace {

uint64_t unix_now() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

Status named(const std::string& path, StatusCode code, const std::string& why) {
  return Status(code, "session file " + path + ": " + why);
}

// The names in `dir` (not "." or "..").
Result<std::vector<std::string>> names_in(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr)
    return Status::io_error("cannot read '%s': %s", dir.c_str(), std::strerror(errno));
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// mkdir -p with mode 0700 for every directory it creates.
Status make_dirs(const std::string& dir) {
  for (size_t at = 1; at <= dir.size(); ++at) {
    if (at != dir.size() && dir[at] != '/') continue;
    const std::string prefix = dir.substr(0, at);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST)
      return Status::io_error("cannot create '%s': %s", prefix.c_str(), std::strerror(errno));
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status::io_error("'%s' is not a directory", dir.c_str());
  return Status::ok();
}

// A fingerprint quoted for a message, clipped.
std::string quoted(std::string_view s) {
  constexpr size_t kShown = 80;
  return "\"" + std::string(s.substr(0, kShown)) + (s.size() > kShown ? "...\"" : "\"");
}

// Empty when a file of this header and record was written by `m`, else the difference.
std::string model_mismatch(const kv::KvcHeader& h, const SessionRecord& r, const ModelIdentity& m) {
  if (r.model != m.fingerprint || h.model != m.model) {
    return "saved with another model (" + quoted(r.model) + "; this one is " +
           quoted(m.fingerprint) + ")";
  }
  if (h.quant_bits != m.quant_bits) {
    return "saved with " + std::to_string(h.quant_bits) + "-bit routed experts, this model has " +
           std::to_string(m.quant_bits);
  }
  return "";
}

// "<id>.kv" for an id of 40 hex digits (either case), or an error.
Result<std::string> file_name_of(std::string_view id) {
  std::string lower(id);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!is_session_file_name(lower + ".kv"))
    return Status::invalid_argument("'%.*s' is not a session id (40 hex digits)",
                                    static_cast<int>(std::min<size_t>(id.size(), 64)), id.data());
  return lower + ".kv";
}

SessionInfo info_of(std::string_view name, const kv::KvcHeader& h, const SessionRecord& r,
                    uint64_t file_bytes) {
  return {.id = std::string(name.substr(0, 40)),
          .title = r.title,
          .created = r.created,
          .last_used = h.last_used,
          .tokens = h.tokens,
          .n_ctx = h.n_ctx,
          .file_bytes = file_bytes,
          .stripped = h.payload_bytes == 0};
}

// The payload of a whole file (one copy: the file's buffer goes with `f`).
std::vector<uint8_t> take_payload(WholeSessionFile&& f) {
  return std::vector<uint8_t>(f.view.payload.begin(), f.view.payload.end());
}

}  // namespace

std::string default_session_dir() {
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && *home != '\0' ? home : ".") + "/.ds4/kvcache";
}

Result<SessionStore> SessionStore::open(Options o) {
  if (o.dir.empty()) return Status::invalid_argument("no session directory");
  while (o.dir.size() > 1 && o.dir.back() == '/') o.dir.pop_back();
  if (!o.now) o.now = unix_now;
  DS4_TRY(make_dirs(o.dir));
  DS4_ASSIGN_OR_RETURN(const std::vector<std::string> names, names_in(o.dir));
  for (const std::string& n : names) {
    // A writer that no longer runs (killed during a save) never renames its file. This process's
    // own are stale too: no save of this store has started.
    const pid_t pid = session_temp_writer(n);
    if (pid != 0 && (pid == ::getpid() || (::kill(pid, 0) != 0 && errno == ESRCH)))
      ::unlink((o.dir + "/" + n).c_str());
  }
  return SessionStore(std::move(o));
}

Result<std::vector<SessionInfo>> SessionStore::list() const {
  DS4_ASSIGN_OR_RETURN(const std::vector<std::string> names, names_in(o_.dir));
  std::vector<SessionInfo> out;
  for (const std::string& n : names) {
    if (!is_session_file_name(n)) continue;
    auto head = read_session_head(path(n), o_.max_file_bytes);
    if (!head.is_ok()) continue;  // damaged, or a KV cache file: not ours to judge here
    const kv::KvcHeader& h = head->header;
    const SessionRecord& r = head->record;
    if (h.reason != kv::SaveReason::kAgentSession || !model_mismatch(h, r, o_.model).empty() ||
        session_id(r.title, r.created) + ".kv" != n)
      continue;
    out.push_back(info_of(n, h, r, head->file_bytes));
  }
  std::sort(out.begin(), out.end(), [](const SessionInfo& a, const SessionInfo& b) {
    if (a.last_used != b.last_used) return a.last_used > b.last_used;
    if (a.created != b.created) return a.created > b.created;
    return a.id < b.id;
  });
  return out;
}

Result<std::string> SessionStore::resolve(std::string_view prefix) const {
  std::string want(prefix);
  for (char& c : want) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (want.empty() || want.size() > 40 || !std::all_of(want.begin(), want.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      })) {
    return Status::invalid_argument("'%.*s' is not a session id prefix (1 to 40 hex digits)",
                                    static_cast<int>(std::min<size_t>(prefix.size(), 64)),
                                    prefix.data());
  }
  DS4_ASSIGN_OR_RETURN(const std::vector<std::string> names, names_in(o_.dir));
  std::vector<std::string> ids;
  for (const std::string& n : names) {
    if (!is_session_file_name(n) || n.compare(0, want.size(), want) != 0) continue;
    // Only agent conversations: a KV cache file of the server in the same directory is not one.
    auto h = read_kvc_header(path(n));
    if (h.is_ok() && (h->flags & kv::kKvcAgentFlag) != 0 &&
        h->reason == kv::SaveReason::kAgentSession)
      ids.push_back(n.substr(0, 40));
  }
  if (ids.empty()) return Status::not_found("no session id starts with '%s'", want.c_str());
  if (ids.size() == 1) return ids[0];
  constexpr size_t kNamed = 4;
  std::string names_shown;
  for (size_t i = 0; i < ids.size() && i < kNamed; ++i)
    names_shown += (i == 0 ? "" : ", ") + ids[i].substr(0, 12);
  if (ids.size() > kNamed) names_shown += ", ...";
  return Status::invalid_argument("'%s' is ambiguous: %zu sessions start with it (%s)",
                                  want.c_str(), ids.size(), names_shown.c_str());
}

Status SessionStore::save(const SessionMeta& meta, std::string_view transcript, uint32_t tokens,
                          uint32_t n_ctx, std::span<const uint8_t> payload) {
  return save(meta, transcript, tokens, n_ctx, payload, {});
}

Status SessionStore::save(const SessionMeta& meta, std::string_view transcript, uint32_t tokens,
                          uint32_t n_ctx, std::span<const uint8_t> payload,
                          const base::FillBytes& fill) {
  if (meta.created == 0) return Status::invalid_argument("a session's creation time is not set");
  if (tokens == 0) return Status::invalid_argument("a session of 0 tokens is not saved");
  auto check_payload = [&]() -> Status {
    if (payload.empty()) return Status::ok();
    DS4_ASSIGN_OR_RETURN(const uint32_t held, kv::snapshot_tokens(payload));
    if (held != tokens)
      return Status::invalid_argument("the payload holds %u tokens, the transcript %u", held,
                                      tokens);
    return Status::ok();
  };
  if (!fill) DS4_TRY(check_payload());
  const kv::KvcHeader h{.quant_bits = o_.model.quant_bits,
                        .reason = kv::SaveReason::kAgentSession,
                        .model = o_.model.model,
                        .tokens = tokens,
                        .n_ctx = n_ctx,
                        .created = meta.created,
                        .last_used = o_.now()};
  const SessionRecord r{.title = meta.title,
                        .created = meta.created,
                        .model = o_.model.fingerprint,
                        .transcript_tokens = tokens,
                        .transcript = std::string(transcript)};
  DS4_ASSIGN_OR_RETURN(const SessionFileFrame f, frame_session_file(h, r));
  if (const uint64_t bytes = session_file_bytes(f, payload.size()); bytes > o_.max_file_bytes)
    return Status::resource_exhausted("a %llu-byte session file exceeds the %llu-byte limit",
                                      static_cast<unsigned long long>(bytes),
                                      static_cast<unsigned long long>(o_.max_file_bytes));
  const std::string name = session_id(meta.title, meta.created) + ".kv";
  if (!fill) return write_session_file(o_.dir, name, f, payload, o_.write_hook);
  // The write's stream waits for the fill's verdict before the file's last bytes (a failed fill,
  // even of an empty payload, leaves no file); the token check runs on the whole payload.
  base::ReadyBytes ready(payload.size());
  return base::fill_beside(ready, fill, [&] {
    return write_session_file(o_.dir, name, f, payload, o_.write_hook, &ready, check_payload);
  });
}

namespace {

// The store's checks of a decoded conversation file beyond its bytes: the reason, the model, the
// name.
Status check_conversation(const std::string& path, std::string_view name, const SessionFileView& v,
                          const ModelIdentity& m) {
  if (v.header.reason != kv::SaveReason::kAgentSession)
    return named(path, StatusCode::kInvalidFile, "the system-prompt checkpoint, not a session");
  if (std::string why = model_mismatch(v.header, v.record, m); !why.empty())
    return named(path, StatusCode::kInvalidArgument, why);
  if (session_id(v.record.title, v.record.created) + ".kv" != name) {
    return named(path, StatusCode::kInvalidFile,
                 "its name does not match its title and creation time");
  }
  return Status::ok();
}

}  // namespace

Result<LoadedSession> SessionStore::load(std::string_view id) const {
  DS4_ASSIGN_OR_RETURN(const std::string name, file_name_of(id));
  const std::string p = path(name);
  DS4_ASSIGN_OR_RETURN(WholeSessionFile f, read_session_file(p, o_.max_file_bytes));
  DS4_TRY(check_conversation(p, name, f.view, o_.model));
  LoadedSession out;
  out.info = info_of(name, f.view.header, f.view.record, f.bytes.size());
  // Last use, in place: bookkeeping outside the checksum. A read-only file still loads.
  out.info.last_used = o_.now();
  (void)rewrite_last_used(p, out.info.last_used);
  out.transcript = std::move(f.view.record.transcript);
  out.payload = take_payload(std::move(f));
  return out;
}

Status SessionStore::remove(std::string_view id) {
  DS4_ASSIGN_OR_RETURN(const std::string name, file_name_of(id));
  const std::string p = path(name);
  auto h = read_kvc_header(p);
  if (!h.is_ok() && h.status().code() == StatusCode::kNotFound) return h.status();
  // A damaged file may go; a sound KV cache file (the server's, in the same directory) may not.
  if (h.is_ok() && (h->flags & kv::kKvcAgentFlag) == 0)
    return named(p, StatusCode::kInvalidArgument, "a KV cache file, not an agent session");
  if (::unlink(p.c_str()) != 0)
    return Status::io_error("remove '%s': %s", p.c_str(), std::strerror(errno));
  return Status::ok();
}

Status SessionStore::strip(std::string_view id,
                           const std::function<uint32_t(std::string_view)>& count_tokens) {
  DS4_ASSIGN_OR_RETURN(const std::string name, file_name_of(id));
  const std::string p = path(name);
  DS4_ASSIGN_OR_RETURN(WholeSessionFile f, read_session_file(p, o_.max_file_bytes));
  DS4_TRY(check_conversation(p, name, f.view, o_.model));
  const uint32_t tokens = count_tokens(f.view.record.transcript);
  if (tokens == 0) return named(p, StatusCode::kInvalidArgument, "its transcript has no tokens");
  kv::KvcHeader h = f.view.header;
  h.tokens = tokens;
  SessionRecord r = std::move(f.view.record);
  r.transcript_tokens = tokens;
  DS4_ASSIGN_OR_RETURN(const SessionFileFrame stripped, frame_session_file(h, r));
  return write_session_file(o_.dir, name, stripped, {}, o_.write_hook);
}

Result<std::vector<uint8_t>> SessionStore::load_system(std::string_view system_text,
                                                       uint32_t n_ctx) const {
  const std::string p = path(kSystemFileName);
  DS4_ASSIGN_OR_RETURN(WholeSessionFile f, read_session_file(p, o_.max_file_bytes));
  const SessionFileView& v = f.view;
  if (v.header.reason != kv::SaveReason::kAgentSystem)
    return named(p, StatusCode::kInvalidFile, "a saved session, not the system-prompt checkpoint");
  std::string stale;
  if (v.record.transcript != system_text) {
    stale = "another system prompt";
  } else if (std::string why = model_mismatch(v.header, v.record, o_.model); !why.empty()) {
    stale = why;
  } else if (v.header.n_ctx > n_ctx) {
    stale = "a context of " + std::to_string(v.header.n_ctx) + " tokens";
  } else if (v.payload.empty()) {
    stale = "no payload";
  }
  if (!stale.empty()) return named(p, StatusCode::kNotFound, "stale: " + stale);
  return take_payload(std::move(f));
}

Status SessionStore::save_system(std::string_view system_text, uint32_t tokens, uint32_t n_ctx,
                                 std::span<const uint8_t> payload) {
  if (payload.empty())
    return Status::invalid_argument("a system-prompt checkpoint needs a payload");
  DS4_ASSIGN_OR_RETURN(const uint32_t held, kv::snapshot_tokens(payload));
  if (held != tokens || tokens == 0)
    return Status::invalid_argument("the payload holds %u tokens, the system prompt %u", held,
                                    tokens);
  const uint64_t now = o_.now();
  const kv::KvcHeader h{.quant_bits = o_.model.quant_bits,
                        .reason = kv::SaveReason::kAgentSystem,
                        .model = o_.model.model,
                        .tokens = tokens,
                        .n_ctx = n_ctx,
                        .created = now,
                        .last_used = now};
  const SessionRecord r{.title = "",
                        .created = now,
                        .model = o_.model.fingerprint,
                        .transcript_tokens = tokens,
                        .transcript = std::string(system_text)};
  DS4_ASSIGN_OR_RETURN(const SessionFileFrame f, frame_session_file(h, r));
  if (const uint64_t bytes = session_file_bytes(f, payload.size()); bytes > o_.max_file_bytes)
    return Status::resource_exhausted("a %llu-byte checkpoint exceeds the %llu-byte limit",
                                      static_cast<unsigned long long>(bytes),
                                      static_cast<unsigned long long>(o_.max_file_bytes));
  return write_session_file(o_.dir, kSystemFileName, f, payload, o_.write_hook);
}

}  // namespace ds4::agent
