// Protects: ReadyBytes, the hand-over of a buffer written by one thread and consumed in order by
// another: a waiter returns once its bytes are published (never before), counts only grow, a
// failure releases every waiter with false.
#include "base/ready_bytes.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace ds4::base {
namespace {

TEST(ReadyBytes, AWaiterReturnsOnceItsBytesArePublished) {
  constexpr size_t kTotal = 1 << 16, kStep = 4096;
  std::vector<int> buf(kTotal, 0);
  ReadyBytes ready(kTotal);
  std::atomic<size_t> checked{0};
  std::thread consumer([&] {
    for (size_t end = kStep; end <= kTotal; end += kStep) {
      ASSERT_TRUE(ready.wait(end));
      for (size_t i = end - kStep; i < end; ++i) ASSERT_EQ(buf[i], static_cast<int>(i) + 1);
      checked = end;
    }
  });
  for (size_t end = kStep; end <= kTotal; end += kStep) {
    for (size_t i = end - kStep; i < end; ++i) buf[i] = static_cast<int>(i) + 1;
    ready.publish(end);
    ready.publish(end / 2);  // ignored: counts only grow
  }
  consumer.join();
  EXPECT_EQ(checked.load(), kTotal);
  EXPECT_TRUE(ready.wait(kTotal + 1));  // past the end: the whole buffer, which is final
  ReadyBytes capped(10);
  capped.publish(100);
  EXPECT_TRUE(capped.wait(10));
}

TEST(ReadyBytes, AFailureReleasesEveryWaiterWithFalse) {
  ReadyBytes ready(1000);
  ready.publish(100);
  EXPECT_TRUE(ready.wait(100));
  std::atomic<int> released{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&] {
      EXPECT_FALSE(ready.wait(500));
      ++released;
    });
  }
  ready.fail();
  for (std::thread& t : waiters) t.join();
  EXPECT_EQ(released.load(), 3);
  EXPECT_FALSE(ready.wait(50));  // after a failure, even published bytes are refused
}

}  // namespace
}  // namespace ds4::base
