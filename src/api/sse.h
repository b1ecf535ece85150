// src/api/sse.h: Server-Sent Events framing (one JSON object per `data:` event).
#pragma once

#include <string>
#include <string_view>

namespace ds4::api {

// A comment line: clients ignore it; it keeps proxies and client timers alive during a prefill.
inline constexpr std::string_view kSseKeepalive = ": keepalive\n\n";
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

// `json` must be one line (compact JSON never contains a raw newline).
inline std::string sse_data(std::string_view json) {
  std::string out;
  out.reserve(json.size() + 8);
  out += "data: ";
  out += json;
  out += "\n\n";
  return out;
}

}  // namespace ds4::api
