// Protects: ThreadPool runs every task exactly once, for any pool size, across repeated loops.
#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace ds4::base {
namespace {

TEST(ThreadPool, EveryTaskRunsExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallel_for(n, [&](int64_t i) { hits[static_cast<size_t>(i)]++; });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << i;
    }
  }
}

TEST(ThreadPool, ManyShortLoopsDoNotDeadlock) {
  ThreadPool pool(4);
  std::atomic<int64_t> sum{0};
  for (int rep = 0; rep < 2000; ++rep) pool.parallel_for(3, [&](int64_t i) { sum += i; });
  EXPECT_EQ(sum.load(), 2000 * 3);
}

}  // namespace
}  // namespace ds4::base
