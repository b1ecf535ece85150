// apps/server/api_key.h: where ds4-server's API key comes from, and when listening needs one.
// Owns: choosing the key among --api-key, --api-key-file and the DS4_API_KEY environment
// variable (one source at most), refusing an empty or unprintable key, and what counts as a
// loopback address.
// Does not own: checking requests against the key (http/server.cpp).
#pragma once

#include <optional>
#include <string>

#include "ds4/status.h"

namespace ds4::server {

struct ApiKeySources {
  std::optional<std::string> flag;  // --api-key KEY (visible to local users in ps: prefer a file)
  std::optional<std::string> file;  // --api-key-file FILE: its first line
  std::optional<std::string> env;   // DS4_API_KEY, used when neither flag is given
};

// The key ("" when no source names one). Errors: both flags, an empty key from any source, a key
// with spaces or control characters, an unreadable file.
Result<std::string> resolve_api_key(const ApiKeySources& s);

// 127.0.0.0/8, ::1 and "localhost".
bool is_loopback(const std::string& host);

}  // namespace ds4::server
