// Protects: the default --parallel of ds4-server: half the free memory (after the model file on
// the CPU backend) divided by one session's KV state, clamped to [1, kMaxDefaultSessions], and a
// fixed count when the backend cannot report free memory.
#include "serve/pool_size.h"

#include <gtest/gtest.h>

namespace ds4::serve {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

TEST(PoolSize, HalfOfTheFreeMemoryAfterTheReserve) {
  // 1000 MiB free, 200 reserved: half of 800 is 400 MiB, four sessions of 100 MiB.
  const PoolSizing p = size_pool(1000 * kMiB, 200 * kMiB, 100 * kMiB);
  EXPECT_EQ(p.sessions, 4);
  EXPECT_EQ(p.free_bytes, std::optional<uint64_t>(800 * kMiB));
  EXPECT_EQ(p.session_bytes, 100 * kMiB);
  EXPECT_NE(p.reason.find("800.0 MiB"), std::string::npos) << p.reason;
}

TEST(PoolSize, ClampedToOneAndToTheDefaultMaximum) {
  EXPECT_EQ(size_pool(10 * kMiB, 0, 100 * kMiB).sessions, 1);
  EXPECT_EQ(size_pool(100 * kMiB, 500 * kMiB, 100 * kMiB).sessions, 1);  // reserve > free
  EXPECT_EQ(size_pool(1ull << 40, 0, kMiB).sessions, kMaxDefaultSessions);
}

TEST(PoolSize, UnknownFreeMemoryGivesTheFixedCount) {
  const PoolSizing p = size_pool(std::nullopt, 0, 100 * kMiB);
  EXPECT_EQ(p.sessions, kUnknownMemorySessions);
  EXPECT_FALSE(p.free_bytes.has_value());
  EXPECT_NE(p.reason.find("--parallel"), std::string::npos);
}

}  // namespace
}  // namespace ds4::serve
