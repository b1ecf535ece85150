// src/agent/session_file.h: the bytes of a ds4-agent session file (features.md §5.6, in a layout
// of our own; docs/agent.md "Session files"): a KVC version 2 file (kv/kvc_file.h) with header
// flag bit 3 (kKvcAgentFlag), save reason kAgentSession (a saved conversation) or kAgentSystem
// (the system-prompt checkpoint), no tool-id map, and as its text the agent record:
//
//   ds4-agent-session 1\n
//   {"title":"...","created":U64,"model":"...","transcript_tokens":U32}\n
//   <the transcript: the session's tokens as text, opaque bytes>
//
// followed by the DSV4 payload (Session::save()'s bytes), or no payload for a stripped session.
// Owns: the record's layout and limits, the session id and the title rule, and the checks a
// file's bytes must pass on their own (framing and checksums, the agent flag and reason, the
// record, the payload's token count against the header and the record), as pure functions (the
// fuzzer calls them). Does not own: files and names on disk, the model identity checks
// (session_store.h), or the payload's meaning (the engine's Session::load decodes it).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ds4/status.h"
#include "kv/kvc_file.h"

namespace ds4::agent {

inline constexpr std::string_view kSessionRecordMagic = "ds4-agent-session 1";
inline constexpr size_t kMaxTitleBytes = 1024;                   // in the record (make_title: 200)
inline constexpr size_t kMaxRecordLineBytes = size_t{64} << 10;  // the JSON line, without '\n'
inline constexpr size_t kMakeTitleBytes = 200;

// The record of an agent file (the KVC text section).
struct SessionRecord {
  std::string title;     // empty for the system-prompt checkpoint
  uint64_t created = 0;  // Unix seconds of the first turn, kept across saves
  std::string model;     // the model fingerprint the caller gave
  uint32_t transcript_tokens = 0;
  std::string transcript;  // the session's tokens detokenized, special tokens as their text
  bool operator==(const SessionRecord&) const = default;
};

// The record as the KVC text. Errors (invalid_argument): a title over kMaxTitleBytes, a title or
// model that is not valid UTF-8 (JSON holds only that, and the id hashes the title's exact bytes),
// a JSON line over kMaxRecordLineBytes.
Result<std::string> encode_session_record(const SessionRecord& record);
// A KVC text as a record: the magic line, one JSON object line (at most kMaxRecordLineBytes; the
// four keys with their types -- strings, unsigned integers, transcript_tokens within u32; nesting
// of unknown keys' values at most 16 deep; other keys ignored), the title within kMaxTitleBytes;
// everything after the second '\n' is the transcript. Errors are invalid_file, naming the part.
Result<SessionRecord> decode_session_record(std::string_view text);

// What a session file holds besides its payload: `header` as given (its reason, tokens, n_ctx,
// times, quant, model) with the agent flag set and the tool-id map flag clear, and the record's
// text. kv::KvcWriter makes the file from it and the payload (session_io.h writes it so).
struct SessionFileFrame {
  kv::KvcHeader header;
  std::string text;
};
Result<SessionFileFrame> frame_session_file(kv::KvcHeader header, const SessionRecord& record);
// A whole session file in memory (payload_bytes from `payload`).
Result<std::vector<uint8_t>> encode_session_file(kv::KvcHeader header, const SessionRecord& record,
                                                 std::span<const uint8_t> payload);

// The checks of an agent file's header and text alone (what a listing reads without the payload):
// the agent flag, the reason (kAgentSession or kAgentSystem), no tool-id map, the record, and the
// record's token count equal to the header's. Errors are invalid_file.
Result<SessionRecord> check_session_head(const kv::KvcHeader& header, std::string_view text);
// A payload's declared token count (kv::snapshot_tokens: its first kPayloadHeadBytes bytes are
// enough) against the header's; nothing to check without a payload.
inline constexpr size_t kPayloadHeadBytes = 52;
Status check_session_payload(const kv::KvcHeader& header, std::span<const uint8_t> payload_head);

// A decoded session file. `payload` views the input bytes (empty when stripped).
struct SessionFileView {
  kv::KvcHeader header;
  SessionRecord record;
  std::span<const uint8_t> payload;
};
// Every check that needs only the bytes: decode_kvc (header, framing, checksums: both must match,
// the tool-id map's too, over its empty section), then check_session_head and
// check_session_payload. `computed` as for kv::decode_kvc (sums a reader
// made while reading).
Result<SessionFileView> decode_session_file(std::span<const uint8_t> file,
                                            const kv::KvcChecksums* computed = nullptr);

// The session id: SHA-1 (40 lowercase hex digits) of the title's bytes followed by `created` as
// 8 bytes little-endian. The file is "<id>.kv".
std::string session_id(std::string_view title, uint64_t created);
// A title from the first user prompt: runs of whitespace and control characters become one space,
// the ends are trimmed, bytes that are not well-formed UTF-8 become U+FFFD, and the result is cut
// to at most kMakeTitleBytes bytes at a character boundary; "untitled" when nothing is left.
std::string make_title(std::string_view prompt);

}  // namespace ds4::agent
