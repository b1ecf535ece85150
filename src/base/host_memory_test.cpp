// Protects: the pool sizing of ds4-server reads MemAvailable (not MemFree, which ignores the
// reclaimable page cache) in kibibytes, and says "unknown" rather than guessing.
#include "base/host_memory.h"

#include <gtest/gtest.h>

namespace ds4::base {
namespace {

TEST(HostMemory, ParsesMemAvailableInKibibytes) {
  const char* text =
      "MemTotal:       131072000 kB\n"
      "MemFree:         1000000 kB\n"
      "MemAvailable:   64000000 kB\n"
      "Buffers:          100 kB\n";
  EXPECT_EQ(parse_mem_available(text), std::optional<uint64_t>(64000000ull * 1024));
}

TEST(HostMemory, MissingOrMalformedLineIsUnknown) {
  EXPECT_EQ(parse_mem_available("MemTotal: 100 kB\nMemFree: 50 kB\n"), std::nullopt);
  EXPECT_EQ(parse_mem_available("MemAvailable: lots\n"), std::nullopt);
  EXPECT_EQ(parse_mem_available("MemAvailable: 12 MB\n"), std::nullopt);
  EXPECT_EQ(parse_mem_available(""), std::nullopt);
}

TEST(HostMemory, ThisMachineReportsSome) {
  const auto b = host_available_bytes();
  if (!b) GTEST_SKIP() << "no /proc/meminfo here";
  EXPECT_GT(*b, 0u);
}

}  // namespace
}  // namespace ds4::base
