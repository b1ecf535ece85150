// Protects: ByteBuffer, the uninitialised large buffer of the session save / load path: small and
// huge sizes hold every byte written, huge ones are 2 MiB-aligned, moves hand the memory over
// (the moved-from buffer is empty).
#include "base/byte_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace ds4::base {
namespace {

void fill_and_check(ByteBuffer& b) {
  for (size_t i = 0; i < b.size(); ++i) b.data()[i] = static_cast<uint8_t>(i * 131 + 7);
  for (size_t i = 0; i < b.size(); ++i) ASSERT_EQ(b.data()[i], static_cast<uint8_t>(i * 131 + 7));
}

TEST(ByteBuffer, SmallAndHugeSizesHoldTheirBytes) {
  for (const size_t n : {size_t{0}, size_t{1}, size_t{4095}, ByteBuffer::kHugeBytes - 1,
                         ByteBuffer::kHugeBytes, ByteBuffer::kHugeBytes * 3 + 12345}) {
    SCOPED_TRACE(n);
    ByteBuffer b(n);
    EXPECT_EQ(b.size(), n);
    EXPECT_EQ(b.span().size(), n);
    fill_and_check(b);
    if (n >= ByteBuffer::kHugeBytes) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % ByteBuffer::kHugeBytes, 0u);
    }
  }
}

TEST(ByteBuffer, HugePageAdviceTakesAnyRange) {
  // Advice on memory not yet touched, on ranges with no whole huge page, and none at all: the
  // bytes behave the same either way.
  std::vector<uint8_t> v;
  v.reserve(3 * ByteBuffer::kHugeBytes + 100);
  advise_huge_pages(v.data(), v.capacity());
  v.assign(v.capacity(), 7);
  EXPECT_EQ(v[v.size() - 1], 7);
  advise_huge_pages(v.data() + 1, 10);
  advise_huge_pages(nullptr, 0);
  advise_huge_pages(v.data(), 0);
}

TEST(ByteBuffer, MovesHandTheMemoryOver) {
  ByteBuffer a(ByteBuffer::kHugeBytes + 10);
  fill_and_check(a);
  const uint8_t* p = a.data();
  ByteBuffer b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state
  EXPECT_EQ(a.size(), 0u);
  ByteBuffer c(100);
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), ByteBuffer::kHugeBytes + 10);
  fill_and_check(c);
  EXPECT_EQ(c.capacity(), 2 * ByteBuffer::kHugeBytes);  // whole huge pages
  EXPECT_EQ(a.capacity(), 0u);  // NOLINT(bugprone-use-after-move): the moved-from state
}

TEST(ByteBuffer, ResizesWithinItsCapacityKeepingItsBytes) {
  for (size_t n : {size_t{1000}, ByteBuffer::kHugeBytes + 10}) {
    ByteBuffer b(n);
    fill_and_check(b);
    const uint8_t* p = b.data();
    const uint8_t first = b.data()[0];
    ASSERT_TRUE(b.resize_within(n / 2));
    EXPECT_EQ(b.size(), n / 2);
    EXPECT_EQ(b.data(), p);
    EXPECT_EQ(b.data()[0], first);
    ASSERT_TRUE(b.resize_within(b.capacity()));
    EXPECT_EQ(b.size(), b.capacity());
    EXPECT_FALSE(b.resize_within(b.capacity() + 1));  // unchanged
    EXPECT_EQ(b.size(), b.capacity());
    fill_and_check(b);
  }
}

}  // namespace
}  // namespace ds4::base
