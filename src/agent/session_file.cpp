// src/agent/session_file.cpp: the agent session file's bytes (see session_file.h).
#include "agent/session_file.h"

#include <cinttypes>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/utf8.h"
#include "kv/kvc_store.h"  // sha1_hex
#include "kv/snapshot.h"

namespace ds4::agent {
namespace {

using nlohmann::json;

constexpr int kMaxJsonDepth = 16;

// The deepest nesting of arrays and objects in a JSON text (strings skipped), so that a hostile
// line of 64 KiB of '[' is refused before a parser builds it.
int json_depth(std::string_view s) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : s) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// An unsigned JSON integer at `key` no larger than `max`, or an error naming the key.
Status read_unsigned(const json& obj, const char* key, uint64_t max, uint64_t* out) {
  const auto it = obj.find(key);
  if (it == obj.end()) return Status::invalid_file("agent record has no \"%s\"", key);
  if (!it->is_number_unsigned() || it->get<uint64_t>() > max)
    return Status::invalid_file("agent record \"%s\" is not an unsigned integer up to %" PRIu64,
                                key, max);
  *out = it->get<uint64_t>();
  return Status::ok();
}

Status read_string(const json& obj, const char* key, std::string* out) {
  const auto it = obj.find(key);
  if (it == obj.end()) return Status::invalid_file("agent record has no \"%s\"", key);
  if (!it->is_string()) return Status::invalid_file("agent record \"%s\" is not a string", key);
  *out = it->get<std::string>();
  return Status::ok();
}

bool is_space_or_control(unsigned char c) { return c <= 0x20 || c == 0x7f; }

}  // namespace

Result<std::string> encode_session_record(const SessionRecord& r) {
  if (r.title.size() > kMaxTitleBytes)
    return Status::invalid_argument("session title of %zu bytes (at most %zu)", r.title.size(),
                                    kMaxTitleBytes);
  if (!base::is_valid_utf8(r.title))
    return Status::invalid_argument("session title is not valid UTF-8");
  if (!base::is_valid_utf8(r.model))
    return Status::invalid_argument("model fingerprint is not valid UTF-8");
  json obj = json::object();
  obj["title"] = r.title;
  obj["created"] = r.created;
  obj["model"] = r.model;
  obj["transcript_tokens"] = r.transcript_tokens;
  const std::string line = obj.dump();
  if (line.size() > kMaxRecordLineBytes)
    return Status::invalid_argument("agent record line of %zu bytes (at most %zu)", line.size(),
                                    kMaxRecordLineBytes);
  std::string out;
  out.reserve(kSessionRecordMagic.size() + line.size() + 2 + r.transcript.size());
  out.append(kSessionRecordMagic).append("\n").append(line).append("\n").append(r.transcript);
  return out;
}

Result<SessionRecord> decode_session_record(std::string_view text) {
  const size_t magic_end = kSessionRecordMagic.size();
  if (text.size() <= magic_end || text.substr(0, magic_end) != kSessionRecordMagic ||
      text[magic_end] != '\n') {
    return Status::invalid_file("its text does not start with \"%.*s\"",
                                static_cast<int>(kSessionRecordMagic.size()),
                                kSessionRecordMagic.data());
  }
  text.remove_prefix(magic_end + 1);
  const size_t eol = text.substr(0, kMaxRecordLineBytes + 1).find('\n');
  if (eol == std::string_view::npos) {
    return Status::invalid_file("agent record line is %s", text.size() > kMaxRecordLineBytes
                                                               ? "longer than 64 KiB"
                                                               : "not ended by a newline");
  }
  const std::string_view line = text.substr(0, eol);
  if (json_depth(line) > kMaxJsonDepth)
    return Status::invalid_file("agent record nests deeper than %d levels", kMaxJsonDepth);
  const json obj = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (obj.is_discarded()) return Status::invalid_file("agent record is not valid JSON");
  if (!obj.is_object()) return Status::invalid_file("agent record is not a JSON object");
  SessionRecord r;
  uint64_t tokens = 0;
  DS4_TRY(read_string(obj, "title", &r.title));
  DS4_TRY(read_unsigned(obj, "created", std::numeric_limits<uint64_t>::max(), &r.created));
  DS4_TRY(read_string(obj, "model", &r.model));
  DS4_TRY(read_unsigned(obj, "transcript_tokens", std::numeric_limits<uint32_t>::max(), &tokens));
  if (r.title.size() > kMaxTitleBytes)
    return Status::invalid_file("agent record title of %zu bytes (at most %zu)", r.title.size(),
                                kMaxTitleBytes);
  r.transcript_tokens = static_cast<uint32_t>(tokens);
  r.transcript = std::string(text.substr(eol + 1));
  return r;
}

Result<SessionFileFrame> frame_session_file(kv::KvcHeader header, const SessionRecord& record) {
  DS4_ASSIGN_OR_RETURN(std::string text, encode_session_record(record));
  if (text.size() > std::numeric_limits<uint32_t>::max())
    return Status::invalid_argument("session transcript of %zu bytes", record.transcript.size());
  header.flags = static_cast<uint8_t>((header.flags | kv::kKvcAgentFlag) & ~kv::kKvcToolMapFlag);
  return SessionFileFrame{.header = header, .text = std::move(text)};
}

Result<std::vector<uint8_t>> encode_session_file(kv::KvcHeader header, const SessionRecord& record,
                                                 std::span<const uint8_t> payload) {
  DS4_ASSIGN_OR_RETURN(const SessionFileFrame f, frame_session_file(header, record));
  return kv::encode_kvc(f.header, f.text, payload, {});
}

Result<SessionRecord> check_session_head(const kv::KvcHeader& h, std::string_view text) {
  if ((h.flags & kv::kKvcAgentFlag) == 0)
    return Status::invalid_file("not an agent session file (a KV cache file: header flag 3 clear)");
  if (h.reason != kv::SaveReason::kAgentSession && h.reason != kv::SaveReason::kAgentSystem)
    return Status::invalid_file("agent file with save reason %u", static_cast<unsigned>(h.reason));
  if ((h.flags & kv::kKvcToolMapFlag) != 0)
    return Status::invalid_file("agent file with a tool-id map");
  DS4_ASSIGN_OR_RETURN(SessionRecord r, decode_session_record(text));
  if (r.transcript_tokens != h.tokens) {
    return Status::invalid_file("its record counts %u transcript tokens, its header %u",
                                r.transcript_tokens, h.tokens);
  }
  return r;
}

Status check_session_payload(const kv::KvcHeader& h, std::span<const uint8_t> payload_head) {
  if (payload_head.empty()) return Status::ok();
  DS4_ASSIGN_OR_RETURN(const uint32_t held, kv::snapshot_tokens(payload_head));
  if (held != h.tokens)
    return Status::invalid_file("its payload holds %u tokens, its header says %u", held, h.tokens);
  return Status::ok();
}

Result<SessionFileView> decode_session_file(std::span<const uint8_t> file,
                                            const kv::KvcChecksums* computed) {
  DS4_ASSIGN_OR_RETURN(kv::KvcView kvc, kv::decode_kvc(file, {}, computed));
  // No map is written, so the footer's second sum is the empty section's: any other is damage
  // (for a cache file decode_kvc only drops the map).
  if (!kvc.tool_map_error.empty())
    return Status::invalid_file("KVC footer: %s", kvc.tool_map_error.c_str());
  SessionFileView v;
  v.header = kvc.header;
  v.payload = kvc.payload;
  DS4_ASSIGN_OR_RETURN(v.record, check_session_head(v.header, kvc.text));
  DS4_TRY(check_session_payload(v.header, v.payload));
  return v;
}

std::string session_id(std::string_view title, uint64_t created) {
  std::string bytes(title);
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>(created >> (8 * i)));
  return kv::sha1_hex(bytes);
}

std::string make_title(std::string_view prompt) {
  std::string out;
  bool pending_space = false;
  size_t i = 0;
  while (i < prompt.size()) {
    const auto c = static_cast<unsigned char>(prompt[i]);
    if (is_space_or_control(c)) {
      pending_space = !out.empty();
      ++i;
      continue;
    }
    uint32_t cp = 0;
    size_t n = base::decode_utf8(prompt, i, &cp);
    std::string ch;
    if (n == 0) {
      base::append_utf8(0xfffd, &ch);  // one replacement per ill-formed byte
      n = 1;
    } else {
      ch = std::string(prompt.substr(i, n));
    }
    i += n;
    if (out.size() + (pending_space ? 1 : 0) + ch.size() > kMakeTitleBytes) break;
    if (pending_space) out.push_back(' ');
    pending_space = false;
    out += ch;
  }
  return out.empty() ? "untitled" : out;
}

}  // namespace ds4::agent
