// The request channel: events arrive in order across threads, next() times out when nothing came
// (the submitter's keepalive tick), finished() turns true only with kDone, and a probe that
// reports the client gone cancels the request.
#include "serve/ticket.h"

#include <gtest/gtest.h>

#include <thread>

namespace ds4::serve {
namespace {

using std::chrono::milliseconds;

TEST(Ticket, TimesOutWhenEmpty) {
  Ticket t;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(t.next(milliseconds(30)).has_value());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(25));
}

TEST(Ticket, DeliversInOrderAcrossThreads) {
  Ticket t;
  std::thread producer([&] {
    for (int i = 0; i < 100; ++i)
      t.push(Event{.kind = EventKind::kText, .text = std::to_string(i)});
    t.push(Event{.kind = EventKind::kDone, .finish = FinishReason::kLength});
  });
  for (int i = 0; i < 100; ++i) {
    auto e = t.next(milliseconds(5000));
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->text, std::to_string(i));
  }
  auto done = t.next(milliseconds(5000));
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->kind, EventKind::kDone);
  producer.join();
  EXPECT_TRUE(t.finished());
}

TEST(Ticket, CancelIsVisibleToTheProducer) {
  Ticket t;
  EXPECT_FALSE(t.cancelled());
  t.cancel();
  EXPECT_TRUE(t.cancelled());
}

TEST(Ticket, ProbeCancelsOnceTheClientIsGone) {
  Ticket t;
  bool gone = false;
  t.set_probe([&] { return gone; });
  EXPECT_FALSE(t.cancelled());
  gone = true;
  EXPECT_TRUE(t.cancelled());
  gone = false;
  EXPECT_TRUE(t.cancelled());  // a cancellation stays
  t.set_probe(nullptr);
  EXPECT_TRUE(t.cancelled());
}

}  // namespace
}  // namespace ds4::serve
