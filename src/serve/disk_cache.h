// src/serve/disk_cache.h: the disk KV cache as the server uses it (features.md §3): a KVC
// directory (kv/kvc_store.h) behind one lock, and the disk writer thread.
// Owns: the store, the FIFO of disk work (checkpoints waiting to be written, bounded; the header
// updates and removals that follow a load), and the writer thread that does that work: it
// decodes a checkpoint's tokens into its cache text, encodes and writes the file (temporary file,
// fsync, rename), rewrites a loaded file's hits and last use, deletes consumed or rejected files.
// So the scheduler never waits on a disk write: it hands over the payload bytes it copied out of
// the session (the one copy only the session's owner can make) and goes on. Lookups (scheduler
// thread) and tool-id restores (HTTP threads) read files under the same lock.
// Does not own: when to save or what to load into which session (the scheduler, with
// cache_policy.h), the replay map and the tokenizer (borrowed: they must outlive the cache).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/byte_buffer.h"
#include "ds4/status.h"
#include "ds4/tokenizer.h"
#include "kv/kvc_store.h"
#include "serve/replay_map.h"

namespace ds4::serve {

struct DiskCacheOptions {
  std::string dir;                               // --kv-disk-dir
  uint64_t budget_bytes = uint64_t{8192} << 20;  // --kv-disk-space-mb
  kv::KvcQuery query;                            // what a file must match to be loaded
  size_t max_tool_ids = 100000;                  // bounds the KTM sections read
  // Checkpoints waiting for the writer, by count and by payload bytes (one is always taken when
  // none waits); one more is dropped with a log line, so a slow disk costs saves, not memory.
  size_t max_pending = 4;
  uint64_t max_pending_bytes = uint64_t{8} << 30;
  // One line per save, failure, hit or skipped file; empty: stderr.
  std::function<void(const std::string&)> log;
};

// A checkpoint handed to the writer: the session's payload and what names it -- its tokens, which
// the writer decodes into the cache text, or a visible transcript given as `text` with the header
// bit that says so (features.md §3.1, §3.3: evict and shutdown saves of a live binding).
struct SaveJob {
  kv::SaveReason reason = kv::SaveReason::kUnknown;
  uint32_t tokens = 0;
  std::vector<TokenId> token_ids;  // used when `text` is empty
  std::string text;
  uint8_t key_flag = 0;      // 0, kv::kKvcResponsesTextFlag or kv::kKvcThinkingTextFlag (with text)
  base::ByteBuffer payload;  // from payload_buffer()
};

// A file found for a prompt, read and framed (kvc_file.h); the payload is not decoded yet.
struct DiskHit {
  kv::KvcEntry entry;
  base::ByteBuffer file;
  std::span<const uint8_t> payload;  // into `file`
  std::vector<kv::ToolMapEntry> tool_map;
};

struct DiskCacheStats {
  int saved = 0;    // files written
  int failed = 0;   // writes that failed (a full disk, say)
  int dropped = 0;  // checkpoints not written because the writer was behind
  int hits = 0;     // files loaded into a session
  size_t files = 0;
  uint64_t bytes = 0;
};

class DiskCache {
 public:
  // Opens (creates) the directory and starts the writer. `replay` may be null (exact replay
  // off): then files are written without a tool-id map and maps are not restored. `tok` decodes
  // checkpoint tokens (the writer thread calls its const methods). Errors: the directory cannot
  // be created or read, quant bits other than 2 and 4.
  static Result<std::unique_ptr<DiskCache>> open(DiskCacheOptions options, ReplayMap* replay,
                                                 const Tokenizer& tok);
  // Does the queued work, then stops the writer.
  ~DiskCache();
  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;

  // A buffer of `bytes` bytes for a checkpoint's payload (the scheduler's Session::save_to): the
  // one the writer kept from an earlier checkpoint when it can hold them, else a new one. A kept
  // buffer has its pages faulted in and written, so a save then costs its copies alone (issue 55
  // item 4: the zero fill and page faults of a fresh 400 MB buffer were most of a save's export).
  // The writer keeps one buffer, the largest it has written (up to max_pending_bytes).
  base::ByteBuffer payload_buffer(size_t bytes);
  // Queues a checkpoint for the writer (returns at once). False when it was dropped: below the
  // minimum, or the writer already has max_pending waiting.
  bool save(SaveJob job);
  // Waits until all queued work is done (tests, shutdown).
  void flush();

  // The file whose text is the longest byte prefix of `rendered` that the query admits, with
  // `visible_keys` (kv::KvcQuery) for the files keyed by a visible transcript, read and checked;
  // nullopt when there is none (damaged files met on the way are removed and logged).
  std::optional<DiskHit> lookup(std::string_view rendered, uint8_t visible_keys = 0);
  // After the payload went into a session: its tool-id map goes into the replay map now; the
  // writer then rewrites the file's hits + 1 and last use, or deletes it when the live session
  // owns it (`consume`; it leaves the index at once, so no lookup finds it meanwhile).
  void loaded(const DiskHit& hit, bool consume);
  // The payload could not be used (another shape, a bad row count...): the file leaves the index
  // now and the writer deletes it.
  void reject(const DiskHit& hit, const std::string& why);

  // Puts the mappings of `ids` that the replay map lacks, from every file with a tool-id map,
  // into the replay map (features.md §3.2; HTTP threads, before rendering).
  void restore_tool_ids(std::span<const std::string> ids);

  DiskCacheStats stats() const;
  const DiskCacheOptions& options() const { return o_; }
  void log(const std::string& line) const;

 private:
  // One piece of the writer's work, done in the order queued (a removal queued before a save of
  // the same name never deletes the new file).
  struct Job {
    enum class Kind { kSave, kTouch, kRemove } kind = Kind::kSave;
    SaveJob save;      // kSave
    std::string name;  // kTouch, kRemove
  };
  DiskCache(DiskCacheOptions options, ReplayMap* replay, const Tokenizer& tok, kv::KvcStore store);
  void run();
  void write(SaveJob& job);
  void bookkeep(const Job& job);
  void push(Job job);  // a touch or a removal (never dropped)
  void remember(std::span<const kv::ToolMapEntry> entries);
  void keep_spare(base::ByteBuffer* b);  // under mu_: *b becomes spare_ if it is the larger

  DiskCacheOptions o_;
  ReplayMap* replay_;
  const Tokenizer* tok_;
  mutable std::mutex store_mu_;
  kv::KvcStore store_;  // guarded by store_mu_

  mutable std::mutex mu_;
  std::condition_variable cv_;                // work for the writer, or stop
  std::condition_variable idle_cv_;           // the queue drained
  std::deque<Job> queue_;                     // guarded by mu_
  size_t queued_saves_ = 0;                   // guarded by mu_: kSave jobs in queue_
  uint64_t queued_bytes_ = 0;                 // guarded by mu_: payload bytes in queue_
  int hits_ = 0;                              // guarded by mu_
  bool writing_ = false;                      // guarded by mu_
  bool stop_ = false;                         // guarded by mu_
  int saved_ = 0, failed_ = 0, dropped_ = 0;  // guarded by mu_
  base::ByteBuffer spare_;                    // guarded by mu_: kept for payload_buffer()
  std::thread thread_;
};

}  // namespace ds4::serve
