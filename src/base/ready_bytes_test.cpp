// Protects: ReadyBytes, the hand-over of a buffer written by one thread and consumed in order by
// another: a waiter returns once its bytes are published (never before), counts only grow, a
// failure releases every waiter with false, the producer's first verdict stands; fill_beside
// joins its consumer before it returns or rethrows.
#include "base/ready_bytes.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
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

TEST(ReadyBytes, TheFirstVerdictStandsAndEveryBytePublishedIsNoVerdict) {
  ReadyBytes ok(100);
  ok.publish(100);
  std::atomic<bool> verdict_seen{false};
  std::thread waiter([&] {
    EXPECT_TRUE(ok.wait_finished());
    verdict_seen = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(verdict_seen.load()) << "every byte published is not a finish";
  ok.finish();
  waiter.join();
  ok.fail();  // ignored: it finished
  EXPECT_TRUE(ok.wait_finished());
  EXPECT_TRUE(ok.wait(100));
  ReadyBytes bad(100);
  bad.publish(100);
  bad.fail();
  bad.finish();  // ignored: it failed
  EXPECT_FALSE(bad.wait_finished());
  EXPECT_FALSE(bad.wait(1));
}

TEST(ReadyBytes, FillBesideGivesTheFillsErrorFirstAndJoinsBeforeRethrowing) {
  const FillBytes good = [](const std::function<void(size_t)>& publish) {
    publish(60);
    return Status::ok();
  };
  const FillBytes broken = [](const std::function<void(size_t)>& publish) {
    publish(100);
    return Status::io_error("device lost");
  };
  ReadyBytes r1(100);
  EXPECT_TRUE(fill_beside(r1, good, [&] {
                return r1.wait_finished() ? Status::ok() : Status::internal("no");
              }).is_ok());
  ReadyBytes r2(100);
  bool consumer_saw_failure = false;
  const Status st = fill_beside(r2, broken, [&] {
    consumer_saw_failure = !r2.wait_finished();
    return Status::invalid_argument("the consumer's error");
  });
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_TRUE(consumer_saw_failure);
  ReadyBytes r3(100);
  EXPECT_EQ(fill_beside(r3, good, [] { return Status::invalid_argument("x"); }).code(),
            StatusCode::kInvalidArgument);
  // A fill that throws: the consumer sees a failure and is joined, then the exception goes on.
  ReadyBytes r4(100);
  std::atomic<bool> joined{false};
  EXPECT_THROW(
      (void)fill_beside(
          r4, [](const std::function<void(size_t)>&) -> Status { throw std::runtime_error("oom"); },
          [&] {
            EXPECT_FALSE(r4.wait_finished());
            joined = true;
            return Status::ok();
          }),
      std::runtime_error);
  EXPECT_TRUE(joined.load());
  // A consumer that throws: rethrown after the fill.
  ReadyBytes r5(100);
  EXPECT_THROW((void)fill_beside(r5, good, []() -> Status { throw std::logic_error("hook"); }),
               std::logic_error);
}

}  // namespace
}  // namespace ds4::base
