// Protects: ThreadPool runs every task exactly once, for any pool size, across repeated loops.
#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
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

// Each loop's function and data live on the stack of that iteration only: a task run late, or with
// the previous loop's function, would touch freed memory (caught under ASan/TSan) or miscount.
TEST(ThreadPool, BackToBackLoopsNeverMixJobs) {
  ThreadPool pool(3);
  for (int rep = 0; rep < 3000; ++rep) {
    const int64_t n = 1 + rep % 9;
    std::vector<int> hits(static_cast<size_t>(n), 0);
    const int tag = rep;
    pool.parallel_for(n, [&hits, tag, rep](int64_t i) {
      ASSERT_EQ(tag, rep);
      hits[static_cast<size_t>(i)] += 1;
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)], 1) << rep;
  }
}

// Workers that went to sleep between loops wake up for the next one.
TEST(ThreadPool, SleepingWorkersWakeUp) {
  ThreadPool pool(3);
  for (int rep = 0; rep < 5; ++rep) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the spin phase
    std::atomic<int> ran{0};
    pool.parallel_for(64, [&](int64_t) { ran++; });
    EXPECT_EQ(ran.load(), 64);
  }
}

}  // namespace
}  // namespace ds4::base
