// src/agent/session_store.h: ds4-agent's directory of session files (features.md §5.6;
// docs/agent.md "Session files"): saved conversations named "<id>.kv" (session_file.h) and the
// system-prompt checkpoint "sysprompt.kv", written so that a crash leaves the old file or the new
// one (temporary file, fsync, rename, directory fsync), read with every check a user's file must
// pass before its payload goes to the engine, each refusal one line that names the file.
// Owns: the files, their names, the model identity checks, and last-use bookkeeping (the header's
// last_used, rewritten in place on load: the checksum reads those 8 bytes as zero). Does not own:
// when to save or what a transcript or payload holds (the app and the engine's Session), the
// payload's own checks (Session::load), or the server's cache files (kv/kvc_store.h), which it
// neither lists nor removes.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/session_file.h"
#include "base/ready_bytes.h"
#include "ds4/status.h"
#include "kv/kvc_file.h"

namespace ds4::agent {

// What a file must have been written by to be loaded: the caller's model fingerprint, the
// routed-expert quant bits and the published model.
struct ModelIdentity {
  std::string fingerprint;
  uint8_t quant_bits = 2;
  kv::KvcModel model = kv::KvcModel::kFlash;
};

// A conversation's identity: its title and the Unix second of its first turn (never 0).
struct SessionMeta {
  std::string title;
  uint64_t created = 0;
};

struct SessionInfo {
  std::string id;  // 40 lowercase hex digits
  std::string title;
  uint64_t created = 0, last_used = 0;  // Unix seconds
  uint32_t tokens = 0;                  // transcript tokens
  uint32_t n_ctx = 0;                   // the context of the session that saved it
  uint64_t file_bytes = 0;
  bool stripped = false;  // no payload: the transcript must be evaluated again
};

struct LoadedSession {
  SessionInfo info;
  std::string transcript;
  std::vector<uint8_t> payload;  // Session::save()'s bytes; empty when stripped
};

std::string default_session_dir();  // $HOME/.ds4/kvcache, or ./.ds4/kvcache without HOME

inline constexpr std::string_view kSystemFileName = "sysprompt.kv";

class SessionStore {
 public:
  struct Options {
    std::string dir;
    ModelIdentity model;
    // Files larger than this are refused by their size, before any byte is read.
    uint64_t max_file_bytes = uint64_t{64} << 30;
    std::function<uint64_t()> now;  // Unix seconds; tests replace it
    // Tests: called after each piece of a save's temporary file is written (bytes so far, total),
    // before the fsync and rename; it may throw or kill the process.
    std::function<void(size_t written, size_t total)> write_hook;
  };

  // Creates the directory (and its parents) with mode 0700 when missing, and removes the
  // temporaries (".<name>.tmp.<pid>") of saves whose process is gone.
  static Result<SessionStore> open(Options options);

  // This model's sessions (same fingerprint and quant bits), most recently used first. Files of
  // other models, damaged files and KV cache files are skipped, never deleted; sysprompt.kv is
  // not listed. Reads only each file's head (session_io.h read_session_head: header, record,
  // footer, the payload's token count), not its payload: a damaged payload shows at load().
  Result<std::vector<SessionInfo>> list() const;
  // The id of the one session file (any model's) whose id starts with `hex_prefix` (1..40 hex
  // digits, either case). Errors: invalid_argument (not hex), not_found (none), invalid_argument
  // (ambiguous, naming up to 4 candidates).
  Result<std::string> resolve(std::string_view hex_prefix) const;
  // Writes "<session_id(meta.title, meta.created)>.kv" (reason kAgentSession, last use now),
  // replacing the previous file of the same id only once the new one is whole on disk.
  // meta.created must not be 0; `tokens` must be at least 1; with a payload, its token count
  // must equal `tokens`.
  Status save(const SessionMeta& meta, std::string_view transcript, uint32_t tokens, uint32_t n_ctx,
              std::span<const uint8_t> payload);
  // save() of a payload `fill` (base::FillBytes: Session::save_to) is still writing: `fill` runs on
  // the calling thread while the file is written beside it on another, each piece once final (the
  // export's time hidden behind the write); the payload's token check runs once it is whole, before
  // the file replaces the previous one. A failed fill fails the save (its error) and changes
  // nothing on disk.
  Status save(const SessionMeta& meta, std::string_view transcript, uint32_t tokens, uint32_t n_ctx,
              std::span<const uint8_t> payload, const base::FillBytes& fill);
  // A session file with every check of session_file.h plus: not larger than max_file_bytes (by
  // its size, first), a conversation (reason kAgentSession), this model's fingerprint and quant
  // bits, and its name equal to session_id(title, created). Sets its last use to now. Errors, each
  // one line starting "session file PATH": not_found (missing), invalid_argument (another model
  // or quant; an id that is not 40 hex digits), invalid_file (damaged or not a session), io_error.
  Result<LoadedSession> load(std::string_view id) const;
  // Deletes "<id>.kv", a damaged one too; a sound KV cache file (flag 3 clear) is refused.
  Status remove(std::string_view id);
  // Rewrites the file without its payload; its token count becomes count_tokens(transcript)
  // (at least 1). Its title, creation and last use are kept. A stripped file stays stripped.
  Status strip(std::string_view id,
               const std::function<uint32_t(std::string_view transcript)>& count_tokens);

  // The checkpoint's payload when sysprompt.kv is there for exactly this system text, model,
  // quant and a context of at most `n_ctx`; not_found when absent or stale; invalid_file (with
  // the reason) when damaged.
  Result<std::vector<uint8_t>> load_system(std::string_view system_text, uint32_t n_ctx) const;
  Status save_system(std::string_view system_text, uint32_t tokens, uint32_t n_ctx,
                     std::span<const uint8_t> payload);

  const std::string& dir() const { return o_.dir; }

 private:
  explicit SessionStore(Options o) : o_(std::move(o)) {}
  std::string path(std::string_view name) const { return o_.dir + "/" + std::string(name); }

  Options o_;
};

}  // namespace ds4::agent
