// src/kv/kvc_file.h: the disk KV cache's file format, KVC version 1 (spec/product.md "Disk KV
// Cache", features.md §3.1): a 48-byte header, the cache text (the rendered prefix whose SHA-1
// names the file), the DSV4 session payload (snapshot.h) and the optional KTM tool-id map.
// Owns: the byte layout and every framing check a file must pass before any of it is used, as
// pure functions on bytes (the fuzzer calls them). Does not own: the payload's own checks
// (decode_snapshot), file names, I/O, or the cache policy (which files to load, save, evict).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ds4/status.h"

namespace ds4::kv {

inline constexpr size_t kKvcHeaderBytes = 48;
inline constexpr uint8_t kKvcVersion = 1;
inline constexpr uint8_t kKvcPayloadAbi = 2;  // header byte 20: the DSV4 payload version inside

// Header byte 5: why the file was written.
enum class SaveReason : uint8_t {
  kUnknown = 0,
  kCold = 1,
  kContinued = 2,
  kEvict = 3,
  kShutdown = 4
};

// Header byte 6. Bits 1 and 2 say what the cache text is (no section follows for them); a set bit
// beyond those is a trailer this version cannot skip, so such files are refused.
inline constexpr uint8_t kKvcToolMapFlag = 1 << 0;        // a KTM section follows the payload
inline constexpr uint8_t kKvcResponsesTextFlag = 1 << 1;  // text is a Responses-visible transcript
inline constexpr uint8_t kKvcThinkingTextFlag = 1 << 2;   // text is a thinking-visible transcript
inline constexpr uint8_t kKvcKnownFlags = 0x07;

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
  // section is replay memory, not model state), the rest is ignored.
  std::string tool_map_error;
};

// The 48 header bytes (payload_bytes as given).
std::vector<uint8_t> encode_kvc_header(const KvcHeader& header);
// A whole file. Sets payload_bytes from `payload` and the tool-map flag from `tool_map`.
std::vector<uint8_t> encode_kvc(KvcHeader header, std::string_view text,
                                std::span<const uint8_t> payload,
                                std::span<const ToolMapEntry> tool_map);

// The header alone (the first kKvcHeaderBytes bytes): magic, version, payload ABI, quant bits,
// save reason, flags, model, token count. Errors name the field and its value.
Result<KvcHeader> decode_kvc_header(std::span<const uint8_t> bytes);
// A whole file: the header, then lengths that must fit the bytes exactly (no trailing bytes).
Result<KvcView> decode_kvc(std::span<const uint8_t> file, const KvcLimits& limits = {});
// The KTM section alone (the bytes after the payload): its entries up to the first malformed
// one, which is described in `*error` (empty when the section is intact).
std::vector<ToolMapEntry> decode_kvc_tool_map(std::span<const uint8_t> section,
                                              const KvcLimits& limits, std::string* error);
// Offset of the payload in a file whose header and text length are these.
inline uint64_t kvc_payload_offset(uint32_t text_bytes) { return kKvcHeaderBytes + 4 + text_bytes; }

}  // namespace ds4::kv
