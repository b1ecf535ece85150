// src/gen/tool_id.cpp: tool-call ids from getrandom(2).
#include "gen/tool_id.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>

#include "base/check.h"

namespace ds4::gen {

std::string new_tool_id(std::string_view prefix) {
  uint8_t bytes[16];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    DS4_CHECK(n > 0);  // otherwise getrandom (Linux >= 3.17) fails only on bad arguments
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(prefix);
  for (uint8_t b : bytes) {
    id += kHex[b >> 4];
    id += kHex[b & 15];
  }
  return id;
}

}  // namespace ds4::gen
