// src/base/host_memory.h: how much host memory the process may still take.
// Owns: reading the kernel's estimate (MemAvailable in /proc/meminfo: free memory plus the page
// cache and slabs it can reclaim without swapping). Does not own: any allocation policy (the
// server's pool sizing decides what share of it to use).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ds4::base {

// MemAvailable from /proc/meminfo in bytes; nullopt when the file or the line is missing (not
// Linux, a kernel older than 3.14, a sandbox without /proc).
std::optional<uint64_t> host_available_bytes();

// The same from the text of a meminfo file (split out so it can be tested on fixed text).
std::optional<uint64_t> parse_mem_available(std::string_view meminfo);

}  // namespace ds4::base
