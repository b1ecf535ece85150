// tests/fuzz/kvc_sealed.h: fuzz inputs taken past a KVC file's checksums. Random bytes almost
// never match the footer's two sums, which would leave every check after them to the seeds
// alone; the KVC and agent-session fuzzers also try each input with its sums made right.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/kvc_file.h"

namespace ds4::fuzz {

// `in` with the footer's last 16 bytes (the body sum, then the tool-map sum, little-endian) set
// to the checksums of `in`; `in` unchanged when it is shorter than a footer.
inline std::vector<uint8_t> with_sums_made_right(std::span<const uint8_t> in) {
  std::vector<uint8_t> sealed(in.begin(), in.end());
  const size_t size = sealed.size();
  if (size < kv::kKvcFooterBytes) return sealed;
  const kv::KvcChecksums sums = kv::kvc_checksums(sealed);
  for (int i = 0; i < 8; ++i) {
    sealed[size - 16 + i] = static_cast<uint8_t>(sums.body >> (8 * i));
    sealed[size - 8 + i] = static_cast<uint8_t>(sums.tool_map >> (8 * i));
  }
  return sealed;
}

}  // namespace ds4::fuzz
