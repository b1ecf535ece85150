// src/base/host_memory.cpp: MemAvailable from /proc/meminfo.
#include "base/host_memory.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace ds4::base {

std::optional<uint64_t> parse_mem_available(std::string_view meminfo) {
  constexpr std::string_view kKey = "MemAvailable:";
  size_t at = 0;
  while (at < meminfo.size()) {
    const size_t end = std::min(meminfo.find('\n', at), meminfo.size());
    std::string_view line = meminfo.substr(at, end - at);
    at = end + 1;
    if (!line.starts_with(kKey)) continue;
    line.remove_prefix(kKey.size());
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    uint64_t kib = 0;
    size_t digits = 0;
    while (digits < line.size() && line[digits] >= '0' && line[digits] <= '9') {
      kib = kib * 10 + static_cast<uint64_t>(line[digits] - '0');
      ++digits;
    }
    // The kernel always writes the value in kibibytes ("MemAvailable:  123456 kB").
    if (digits == 0 || !line.substr(digits).starts_with(" kB")) return std::nullopt;
    return kib * 1024;
  }
  return std::nullopt;
}

std::optional<uint64_t> host_available_bytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (f == nullptr) return std::nullopt;
  std::string text;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  return parse_mem_available(text);
}

}  // namespace ds4::base
