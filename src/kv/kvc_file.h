// src/kv/kvc_file.h: the disk KV cache's file format, KVC version 2 (spec/product.md "Disk KV
// Cache", features.md §3.1, plus a checksum footer of our own; docs/kvcache.md): a 48-byte header,
// the cache text (the rendered prefix whose SHA-1 names the file), the DSV4 session payload
// (snapshot.h), the optional KTM tool-id map, and a 24-byte footer holding two checksums
// (base/checksum.h): one of the header, text and payload, one of the tool-id map.
// Owns: the byte layout and every check a file must pass before any of it is used -- framing and
// checksums -- as pure functions on bytes (the fuzzer calls them), and the hashing of a file as it
// is read or written. Does not own: the payload's own checks (decode_snapshot), file names, I/O,
// or the cache policy (which files to load, save, evict).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/checksum.h"
#include "base/ready_bytes.h"
#include "ds4/status.h"

namespace ds4::kv {

inline constexpr size_t kKvcHeaderBytes = 48;
// Version 1 (the reference ds4's, and ours before the checksums) had no footer: refused, never
// read as version 2.
inline constexpr uint8_t kKvcVersion = 2;
inline constexpr uint8_t kKvcPayloadAbi = 2;  // header byte 20: the DSV4 payload version inside

// Header byte 5: why the file was written.
enum class SaveReason : uint8_t {
  kUnknown = 0,
  kCold = 1,
  kContinued = 2,
  kEvict = 3,
  kShutdown = 4,
  kAgentSession = 5,  // ds4-agent: a saved conversation (src/agent/session_file.h)
  kAgentSystem = 6    // ds4-agent: the system-prompt checkpoint
};

// Header byte 6. Bits 1 to 3 say what the cache text is (no section follows for them); a set bit
// beyond those is a trailer this version cannot skip, so such files are refused.
inline constexpr uint8_t kKvcToolMapFlag = 1 << 0;        // a KTM section follows the payload
inline constexpr uint8_t kKvcResponsesTextFlag = 1 << 1;  // text is a Responses-visible transcript
inline constexpr uint8_t kKvcThinkingTextFlag = 1 << 2;   // text is a thinking-visible transcript
// The text section is an agent record (ds4-agent's session files, src/agent/session_file.h), not
// a cache text: the server's store never uses or removes such a file.
inline constexpr uint8_t kKvcAgentFlag = 1 << 3;
inline constexpr uint8_t kKvcKnownFlags = 0x0f;

// Header byte 7: which published model wrote it (test shapes write 0, as Flash).
enum class KvcModel : uint8_t { kFlash = 0, kPro = 1 };

struct KvcHeader {
  uint8_t quant_bits = 2;  // routed-expert storage bits: 2 or 4
  SaveReason reason = SaveReason::kUnknown;
  uint8_t flags = 0;
  KvcModel model = KvcModel::kFlash;
  uint32_t tokens = 0;  // checkpoint tokens (never 0)
  uint32_t hits = 0;
  uint32_t n_ctx = 0;  // context size of the session that wrote it
  uint64_t created = 0;
  uint64_t last_used = 0;  // Unix seconds
  uint64_t payload_bytes = 0;
};

// The footer, the file's last 24 bytes: "KSUM", u32 zero, u64 body checksum, u64 tool-map checksum.
inline constexpr size_t kKvcFooterBytes = 24;
// The checksums' seeds: distinct, so that neither sum can stand in for the other.
inline constexpr uint64_t kKvcBodySeed = 0x4b5643;     // "KVC"
inline constexpr uint64_t kKvcToolMapSeed = 0x4b544d;  // "KTM"
// Header bytes the checksum reads as zero: the hit count (12-15) and last use (32-39), which the
// store rewrites in place after every load (bookkeeping for eviction, not model state).
inline constexpr size_t kKvcHitsAt = 12;
inline constexpr size_t kKvcLastUsedAt = 32;

struct KvcChecksums {
  // Bytes 0 .. the payload's end: the header (hits and last use as zero), the text length, the
  // text and the payload.
  uint64_t body = 0;
  // The KTM section (the bytes between the payload and the footer; none when flag bit 0 is clear).
  uint64_t tool_map = 0;
  bool operator==(const KvcChecksums&) const = default;
};

// Computes a file's checksums from its bytes fed in order, in pieces of any size, so that a
// reader can hash each piece right after reading it, while it is still in the CPU's cache (the
// store reads 256 KiB at a time). Where the body ends is read from the header as it goes by; a
// file whose header lies about its sizes gets sums of something, and decode_kvc refuses it on its
// framing anyway.
class KvcHasher {
 public:
  explicit KvcHasher(uint64_t file_bytes);
  void update(std::span<const uint8_t> piece);
  KvcChecksums sums() const;           // once all file_bytes bytes were fed
  uint64_t at() const { return at_; }  // the file offset update() takes next

  // The body hashed by several threads. Once update() has fed the lead (the header and the text
  // length) and stopped on a block boundary, the body's whole blocks from at() on, the file range
  // apart(), may be hashed by any thread in any order (hash_apart: a block's digest does not
  // depend on the others); add_apart() then takes their digests in file order and update() goes
  // on from apart().end. Elsewhere apart() is empty (begin == end == at()).
  struct Range {
    uint64_t begin = 0, end = 0;  // file offsets; whole blocks of base::kChecksumBlockBytes
    size_t blocks() const { return static_cast<size_t>((end - begin) / base::kChecksumBlockBytes); }
  };
  Range apart() const;
  // The digests of the blocks of apart() that lie whole in `bytes` (the file's bytes from
  // `offset`), each into digests[its index in apart()]. Safe from several threads at once.
  void hash_apart(uint64_t offset, std::span<const uint8_t> bytes,
                  std::span<uint64_t> digests) const;
  void add_apart(std::span<const uint64_t> digests);  // all apart().blocks() of them

 private:
  static constexpr size_t kLead = kKvcHeaderBytes + 4;  // the header and the text length
  uint64_t file_bytes_;
  uint64_t footer_at_;
  uint64_t at_ = 0;        // file offset of the next byte
  uint64_t body_end_ = 0;  // known once the lead is in
  uint8_t lead_[kLead] = {};
  base::Checksum body_{kKvcBodySeed};
  base::Checksum map_{kKvcToolMapSeed};
};

// The checksums of a whole file in memory.
KvcChecksums kvc_checksums(std::span<const uint8_t> file);

// One exact-replay mapping: an API tool-call id and the DSML block the model sampled for it.
struct ToolMapEntry {
  std::string id;
  std::string dsml;
  bool operator==(const ToolMapEntry&) const = default;
};

// The KTM bounds (features.md §3.1): ids of 1..256 bytes, blocks of 1 byte..512 MiB, at most
// 4 * max_tool_ids entries.
inline constexpr size_t kMaxToolIdBytes = 256;
inline constexpr uint64_t kMaxDsmlBytes = uint64_t{512} << 20;
struct KvcLimits {
  size_t max_tool_ids = 100000;
};

// A decoded file. `text` and `payload` view the input bytes.
struct KvcView {
  KvcHeader header;
  std::string_view text;
  std::span<const uint8_t> payload;
  std::vector<ToolMapEntry> tool_map;
  // Not empty when the KTM section held a malformed entry: the entries before it are kept (the
  // section is replay memory, not model state), the rest is ignored; or when the section does
  // not match its checksum: then no entry is kept.
  std::string tool_map_error;
  KvcChecksums checksums;  // the footer's (they matched the bytes)
};

// The 48 header bytes (payload_bytes as given).
std::vector<uint8_t> encode_kvc_header(const KvcHeader& header);
// A file made in order without holding it: stream() hands `put` the head (the header, the text
// length and the text), then the payload in kKvcWritePieceBytes pieces, each hashed just before
// it is handed over (so the writer's copy reads it from the cache: the payload is never copied
// here, and read from memory once), then the tail (the KTM section, if any, and the footer with
// both sums). Sets payload_bytes and the tool-map flag as encode_kvc does.
class KvcWriter {
 public:
  KvcWriter(KvcHeader header, std::string_view text, uint64_t payload_bytes,
            std::span<const ToolMapEntry> tool_map);
  uint64_t file_bytes() const { return file_bytes_; }
  // Once, with the payload of payload_bytes bytes; stops at the first error `put` returns. With
  // hash_threads > 1 the payload is hashed by hash_threads - 1 helper threads (from memory,
  // while `put` takes it piece by piece) instead of piece by piece before each put: the same
  // bytes, sooner where put is slower than hashing (a tmpfs write) and cores are idle. With
  // `ready` (its total the payload's size) each part of the payload is hashed and handed over
  // once its producer has published it: a payload still being filled (an export from the device)
  // goes out as it comes; a producer's failure stops the stream with an unavailable error, and
  // the tail (the file's last bytes) goes out only once the producer has finished.
  Status stream(std::span<const uint8_t> payload,
                const std::function<Status(std::span<const uint8_t>)>& put, size_t hash_threads = 1,
                const base::ReadyBytes* ready = nullptr);

 private:
  std::vector<uint8_t> head_, map_;
  uint64_t file_bytes_;
  KvcHasher hasher_;
};
// Pieces of this size keep a piece and its copy in a core's L2 while it is hashed and written.
inline constexpr size_t kKvcWritePieceBytes = size_t{256} << 10;
// A whole file, footer included. Sets payload_bytes from `payload` and the tool-map flag from
// `tool_map`.
std::vector<uint8_t> encode_kvc(KvcHeader header, std::string_view text,
                                std::span<const uint8_t> payload,
                                std::span<const ToolMapEntry> tool_map);

// The header alone (the first kKvcHeaderBytes bytes): magic, version, payload ABI, quant bits,
// save reason, flags, model, token count. Errors name the field and its value; a version other
// than 2 is invalid_file when older (named as such), unimplemented when newer (a later build's
// file), as are unknown flag bits.
Result<KvcHeader> decode_kvc_header(std::span<const uint8_t> bytes);
// The footer (the last kKvcFooterBytes bytes of a file): its magic and zero bytes; the stored sums.
Result<KvcChecksums> decode_kvc_footer(std::span<const uint8_t> bytes);
// A whole file: the header, lengths that must fit the bytes exactly (text, payload, the tool-id
// map if flagged, the footer, nothing else), then the checksums. `computed` holds sums a reader
// already made with KvcHasher over exactly these bytes; without it they are computed here.
Result<KvcView> decode_kvc(std::span<const uint8_t> file, const KvcLimits& limits = {},
                           const KvcChecksums* computed = nullptr);
// The KTM section alone (the bytes after the payload): its entries up to the first malformed
// one, which is described in `*error` (empty when the section is intact).
std::vector<ToolMapEntry> decode_kvc_tool_map(std::span<const uint8_t> section,
                                              const KvcLimits& limits, std::string* error);
// The bytes after the payload -- the KTM section, if any, and the footer -- read alone (the
// store's tool-id restore skips text and payload): the map's entries when the footer is sound and
// the section matches its checksum, else none, with the reason in `*error`; as the KTM section
// alone, a malformed entry ends the map.
std::vector<ToolMapEntry> decode_kvc_trailer(std::span<const uint8_t> trailer,
                                             const KvcLimits& limits, std::string* error);
// Offset of the payload in a file whose header and text length are these.
inline uint64_t kvc_payload_offset(uint32_t text_bytes) { return kKvcHeaderBytes + 4 + text_bytes; }

}  // namespace ds4::kv
