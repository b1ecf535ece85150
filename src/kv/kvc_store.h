// src/kv/kvc_store.h: a directory of KVC cache files (features.md §3.1, §3.5-3.7): names
// `<sha1 of the cache text>.kv`, writes that leave either the old file or the new one (temporary
// file, fsync, rename, directory fsync; ordinary I/O, never mmap), lookup of the file whose text
// is the longest byte prefix of a rendered prompt, header bookkeeping (hits, last use), and
// eviction under a byte budget by the score of §3.6.
// Owns: the files and the in-memory index of their headers. One owner drives it (not thread-safe).
// Does not own: when to save or load (the server's cache policy), or what a payload means
// (snapshot.h decodes it into a session).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/byte_buffer.h"
#include "ds4/status.h"
#include "kv/kvc_file.h"

namespace ds4::kv {

// SHA-1 of `bytes` as 40 lowercase hex digits (OpenSSL's libcrypto).
std::string sha1_hex(std::string_view bytes);

// Writes a whole KVC file to `fd` through `w` (made for `payload`'s size): the head, each
// kKvcWritePieceBytes piece of the payload hashed and then written while it is in the cache (with
// threads > 1: written while threads - 1 helpers hash it, KvcWriter::stream), the tail.
// `progress` (may be empty) gets the bytes written so far and the file's size after each piece.
// Errors: io_error naming `path`. The one writer of KVC files (the store's and ds4-agent's).
// `ready`: the payload is still being filled by another thread (KvcWriter::stream).
Status write_kvc(int fd, const std::string& path, KvcWriter& w, std::span<const uint8_t> payload,
                 const std::function<void(uint64_t written, uint64_t total)>& progress,
                 size_t threads = 1, const base::ReadyBytes* ready = nullptr);

// How a KVC file is read (KvcStore::read_file).
struct KvcReadOptions {
  // false: the hashing is skipped and the footer's sums are taken as they are, only the framing
  // is checked (ds4-kvc-bench times the load both ways).
  bool verify = true;
  // Threads that read (and hash) the file side by side; 0: KvcStore::threads_for(its size).
  size_t threads = 0;
};

struct KvcStoreOptions {
  std::string dir;
  uint64_t budget_bytes = uint64_t{8192} << 20;  // --kv-disk-space-mb, default 8192
  KvcLimits limits;
  // --kv-cache-reject-different-quant: a file of the other quant is neither loaded, nor kept in
  // place of a new save of the same text, nor devalued by one (§3.3, §3.6).
  bool strict_quant = false;
  // Seconds since the epoch; tests replace it.
  std::function<uint64_t()> now;
  // One line per skipped or removed file (hostile, damaged, evicted); may be empty.
  std::function<void(const std::string&)> log;
};

// What a lookup must match (features.md §3.5 step 2, §3.7).
struct KvcQuery {
  uint32_t min_tokens = 512;  // --kv-cache-min-tokens
  uint32_t n_ctx = 0;         // the session's context: a file of a larger context is not used
  uint8_t quant_bits = 2;
  bool strict_quant = false;  // --kv-cache-reject-different-quant
  KvcModel model = KvcModel::kFlash;
  // Header bits 1-2 (kKvcResponsesTextFlag, kKvcThinkingTextFlag) this request admits. A file
  // whose text is a visible transcript (the client's rendering of a turn whose hidden reasoning
  // the live tokens still hold) serves only the protocol whose rendering that is: Responses for
  // bit 1, chat and Anthropic messages for bit 2 (features.md §1.13 rules 1 and 6, §3.1). Files
  // keyed by their token text (neither bit) serve every request.
  uint8_t visible_keys = 0;
};

struct KvcEntry {
  std::string name;  // "<sha1>.kv"
  KvcHeader header;
  uint32_t text_bytes = 0;
  uint64_t file_bytes = 0;
  int64_t mtime_ns = 0;  // when it was indexed: rescan() re-reads a file that changed
};

// A file encoded for a save (prepare), then room made for it (reserve), written and fsynced under
// a temporary name (write), and renamed into the directory's index (commit).
struct PreparedKvc {
  std::string name;  // "<sha1>.kv"
  std::string tmp;   // the temporary path: ".<sha1>.kv.tmp.<pid>"
  uint64_t bytes = 0;
  // The file write() writes (KvcWriter): the header (`header` with the payload's size), the text,
  // the payload, the tool-id map and the footer. The payload is the one given to prepare() (the
  // caller's memory, never copied, which must outlive the write) or, for a kept file, that file's
  // (its bytes owned here).
  std::vector<ToolMapEntry> tool_map;
  base::ByteBuffer kept_file;
  std::span<const uint8_t> payload;  // the caller's payload or into kept_file
  KvcHeader header;  // the header written (for a kept file: the one it had when prepared)
  std::string text;  // the cache text: commit() devalues the files it continues (§3.6)
  // True when a compatible file of the same name was there (same text, quant admitted, its
  // context <= the new one's): the temporary file is that file with only its tool-id map
  // rewritten (features.md §3.3), so its payload, reason, hits and times are kept.
  bool kept = false;
};

class KvcStore {
 public:
  // Creates the directory (0700) when missing and indexes the headers of its `<sha1>.kv` files.
  // A file that is damaged or obsolete -- it fails the header checks (a KVC version 1 file among
  // them), its header claims more bytes than it holds, its checksum footer is missing -- is
  // removed with one log line; one that a newer build wrote (a later version, unknown flag bits)
  // is left alone and logged once, as is a ds4-agent session file (header flag bit 3, which a user
  // may keep in the same directory). Files beyond the budget are evicted (by score) at once.
  static Result<KvcStore> open(KvcStoreOptions options);

  // Brings the index up to date with the directory (features.md §3.5 step 1, before a lookup):
  // indexes files that appeared (another server on the same directory), forgets files that are
  // gone (a user may wipe it), re-reads files whose size or time changed. A file refused before
  // is not read or logged again until it changes.
  void rescan();

  // Writes the file for `text`. A file of the same name that is compatible (text identical,
  // quant admitted, its context <= header.n_ctx) is kept with only its tool-id map rewritten:
  // the union of its mappings and `tool_map` (features.md §3.3); any other is replaced. Files are
  // evicted before the write, so that the directory holds the budget at every moment, the
  // temporary file included. On failure (a full disk, say) the temporary file is removed and
  // every older file is intact.
  // With `ready`, the payload is still being filled by another thread (a session's export): each
  // piece is written once published; a producer's failure fails the save (no file is left).
  Status save(KvcHeader header, std::string_view text, std::span<const uint8_t> payload,
              std::span<const ToolMapEntry> tool_map, const base::ReadyBytes* ready = nullptr);
  // save() in steps, so that a caller holding a lock around the store need not hold it during
  // the write: prepare() refers to the payload, which must outlive write() (it is never copied:
  // write() hashes each piece and writes it, KvcWriter); it touches neither the index nor any
  // file, and may run while another thread uses the store under the caller's lock: it reads only
  // the options and the same-name file. reserve() evicts until the file fits beside everything on
  // disk and holds its bytes; write() writes and fsyncs the temporary file (no index access:
  // outside the lock); commit() renames it into place and indexes it. abandon() gives up a
  // reserved file. A failed step leaves no temporary file and no reservation.
  Result<PreparedKvc> prepare(KvcHeader header, std::string_view text,
                              std::span<const uint8_t> payload,
                              std::span<const ToolMapEntry> tool_map) const;
  Status reserve(const PreparedKvc& prepared);
  Status write(const PreparedKvc& prepared, const base::ReadyBytes* ready = nullptr) const;
  Status commit(const PreparedKvc& prepared);
  void abandon(const PreparedKvc& prepared);

  // The indexed file whose cache text is the longest byte prefix of `rendered` (ties: more
  // tokens), among those `query` admits; checked by the SHA-1 of the prompt's prefix.
  std::optional<KvcEntry> find(std::string_view rendered, const KvcQuery& query) const;

  // A file read whole, and its decoding. `view` points into `bytes`, whose buffer a move keeps
  // (so a ReadKvc may be moved, not copied).
  struct ReadKvc {
    base::ByteBuffer bytes;  // the whole file (uninitialised huge-page memory before the read)
    KvcView view;
    ReadKvc(base::ByteBuffer b, KvcView v) : bytes(std::move(b)), view(std::move(v)) {}
    ReadKvc(ReadKvc&&) = default;
    ReadKvc& operator=(ReadKvc&&) = default;
    ReadKvc(const ReadKvc&) = delete;
    ReadKvc& operator=(const ReadKvc&) = delete;
  };
  // Reads a file found by find() and verifies it whole: the framing and both checksums (hashed as
  // the file is read), the text's SHA-1 against the name, the text as a prefix of `rendered`. A
  // file that fails is removed, with one log line naming it and the reason, and the error is
  // invalid_file; an error reading it (io_error) leaves it in place.
  Result<ReadKvc> read(const KvcEntry& entry, std::string_view rendered);
  // The file at `path` read whole (at most `max_bytes`) in pieces of kReadPieceBytes, each hashed
  // right after it is read, then decoded and its checksums compared. With several threads
  // (KvcReadOptions::threads) the first piece is read alone (the header says where the body
  // ends), then each thread reads a range of the rest and hashes the body's blocks of each piece
  // right after reading it (KvcHasher::hash_apart): reads of one file run side by side where its
  // writes do not. Errors: io_error (open, read), invalid_file (the file does not decode, or is
  // larger than max_bytes).
  static Result<ReadKvc> read_file(const std::string& path, uint64_t max_bytes,
                                   const KvcLimits& limits, KvcReadOptions o = {});
  // 256 KiB: whole blocks of the checksum (base::kChecksumBlockBytes), so they are hashed where
  // they lie, and few enough bytes to be still in the core's cache when they are hashed.
  static constexpr size_t kReadPieceBytes = size_t{256} << 10;
  // Files of 32 MiB or more are read, and hashed while they are written, by io_threads() threads.
  static constexpr uint64_t kParallelBytes = uint64_t{32} << 20;
  // Half the cores, at most 8; DS4_KVC_THREADS=N (1-64) sets it (1: one thread).
  static size_t io_threads();
  static size_t threads_for(uint64_t file_bytes) {
    return file_bytes >= kParallelBytes ? io_threads() : 1;
  }

  // After a load: hits + 1 and last use = now, rewritten in the file's header.
  Status touch(const std::string& name);
  // Deletes a file (consumed by the live session, or corrupt).
  void remove(const std::string& name);
  // Drops a file from the index without touching the disk (no I/O: the caller has the file
  // removed later); rescan() does not index it again unless it changes.
  void forget(const KvcEntry& entry);

  // The exact-replay entries of the wanted ids, from every file of `model` that carries a tool-id
  // map (features.md §3.2: files another model wrote are not used).
  std::vector<ToolMapEntry> tool_map_entries(std::span<const std::string> ids,
                                             KvcModel model) const;

  const std::vector<KvcEntry>& entries() const { return entries_; }
  // Everything the cache holds on disk: the indexed files, a reserved file being written, and the
  // temporary files of other live processes (stale ones, whose process is gone, are removed when
  // the store opens).
  uint64_t bytes_used() const;
  // Temporary files of other processes found by the last open() or rescan().
  size_t foreign_temp_files() const { return foreign_tmp_files_; }

 private:
  explicit KvcStore(KvcStoreOptions options) : o_(std::move(options)) {}
  std::string path(const std::string& name) const { return o_.dir + "/" + name; }
  Result<std::vector<std::string>> list();  // the cache names in the directory, sorted; counts
                                            // the other processes' temporary files
  // At open: removes the temporary files whose writer is gone (a kill -9 during a save).
  void remove_stale_temps();
  void index(const std::string& name);
  // Deletes a damaged or obsolete file, with one log line naming it and the reason.
  void discard(const std::string& name, const std::string& why);
  void log(const std::string& line) const;
  // Deletes files by ascending score until `incoming` more bytes fit the budget. With
  // `prepared`, the continued files it continues are devalued (§3.6).
  void evict_for(uint64_t incoming, const PreparedKvc* prepared);
  // The file at `name`, read whole, when a new save of `text` under `header` keeps it (§3.3).
  std::optional<ReadKvc> compatible_file(const std::string& name, const KvcHeader& header,
                                         std::string_view text) const;

  KvcStoreOptions o_;
  std::vector<KvcEntry> entries_;
  struct Refused {
    std::string name;
    uint64_t bytes = 0;
    int64_t mtime_ns = 0;
  };
  std::vector<Refused> refused_;  // files index() skipped, as they were then
  uint64_t reserved_bytes_ = 0;   // the file reserve() made room for, until commit / abandon
  uint64_t foreign_tmp_bytes_ = 0;
  size_t foreign_tmp_files_ = 0;
};

// A save whose payload is produced meanwhile (issue 55 item 4: a session's export from the device
// beside the file's write): `fill` runs on the calling thread, writing the payload over `payload`
// and calling its argument with the count of leading bytes that are final; store.save runs on
// a helper thread and writes each piece once it is final, so the save takes about the longer of
// the two instead of their sum. Returns fill's error first, then the save's; on either, no file
// is left.
Status save_while_filling(KvcStore& store, KvcHeader header, std::string_view text,
                          std::span<uint8_t> payload, std::span<const ToolMapEntry> tool_map,
                          const base::FillBytes& fill);

}  // namespace ds4::kv
