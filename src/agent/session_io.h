// src/agent/session_io.h: the disk side of ds4-agent's session files (session_store.h): a file
// read whole and verified, or only its head (header, record, footer, the payload's first bytes)
// for a listing; a file written so that a crash leaves the old one or the new one; the
// temporary names those writes use.
// Owns: system calls, size bounds before reading, and error messages that name the file. Does
// not own: which files a store lists or loads, or the model checks (session_store.cpp), or the
// bytes' layout (session_file.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/session_file.h"
#include "base/byte_buffer.h"
#include "base/ready_bytes.h"
#include "ds4/status.h"

namespace ds4::agent {

// A whole file and its decoding (`view` points into `bytes`, whose buffer a move keeps).
struct WholeSessionFile {
  base::ByteBuffer bytes;
  SessionFileView view;
};
// Reads and verifies the file at `path` (decode_session_file; checksums hashed as it is read).
// Errors: not_found (no such file), invalid_file (larger than `max_bytes`, by its size before
// anything is read; not a regular file; every decoding error), io_error; each message starts
// with "session file PATH: ".
Result<WholeSessionFile> read_session_file(const std::string& path, uint64_t max_bytes);

// What a listing reads of a file: its header, its record, its footer's magic, the payload's
// declared token count (check_session_head, check_session_payload), and that the sizes the header
// and text length claim add up to the file's size. Not the checksums (the payload is not read).
struct SessionFileHead {
  kv::KvcHeader header;
  SessionRecord record;
  uint64_t file_bytes = 0;
};
Result<SessionFileHead> read_session_head(const std::string& path, uint64_t max_bytes);
// The KVC header alone (the first 48 bytes), decoded.
Result<kv::KvcHeader> read_kvc_header(const std::string& path);

// The size of the file `frame` and a payload of `payload_bytes` make.
uint64_t session_file_bytes(const SessionFileFrame& frame, uint64_t payload_bytes);
// Writes the file of `frame` and `payload` to "DIR/.NAME.tmp.PID" (kv::write_kvc: the payload is
// never copied; `hook`, if any, is called after each piece with the bytes written so far and the
// total), fsyncs it, renames it to "DIR/NAME" and fsyncs DIR. On any failure, or an exception from
// the hook, the temporary file is removed and DIR/NAME is as it was. With `ready`, another thread
// is still filling the payload: each piece is written once final, and a fill that fails fails the
// write. `before_commit` (may be empty) runs after the fsync, before the rename: its error leaves
// DIR/NAME as it was too.
Status write_session_file(const std::string& dir, std::string_view name,
                          const SessionFileFrame& frame, std::span<const uint8_t> payload,
                          const std::function<void(size_t, size_t)>& hook,
                          const base::ReadyBytes* ready = nullptr,
                          const std::function<Status()>& before_commit = {});

// Sets the header's last use (bytes 32-39, which the checksum reads as zero) in place.
Status rewrite_last_used(const std::string& path, uint64_t last_used);

// The pid in a temporary name ".NAME.tmp.PID" whose NAME is "<40 hex>.kv" or "sysprompt.kv";
// 0 for any other name.
pid_t session_temp_writer(std::string_view file_name);
// "<40 lowercase hex>.kv"
bool is_session_file_name(std::string_view file_name);

}  // namespace ds4::agent
