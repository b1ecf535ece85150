// Protects: HostBuffer, the uninitialised large buffer of the session save / load path: small and
// huge sizes hold every byte written, huge ones are 2 MiB-aligned, moves hand the memory over
// (the moved-from buffer is empty), shrink only lowers the size.
#include "base/host_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

namespace ds4::base {
namespace {

void fill_and_check(HostBuffer& b) {
  for (size_t i = 0; i < b.size(); ++i) b.data()[i] = static_cast<uint8_t>(i * 131 + 7);
  for (size_t i = 0; i < b.size(); ++i) ASSERT_EQ(b.data()[i], static_cast<uint8_t>(i * 131 + 7));
}

TEST(HostBuffer, SmallAndHugeSizesHoldTheirBytes) {
  for (const size_t n : {size_t{0}, size_t{1}, size_t{4095}, HostBuffer::kHugeBytes - 1,
                         HostBuffer::kHugeBytes, HostBuffer::kHugeBytes * 3 + 12345}) {
    SCOPED_TRACE(n);
    HostBuffer b(n);
    EXPECT_EQ(b.size(), n);
    EXPECT_EQ(b.span().size(), n);
    fill_and_check(b);
    if (n >= HostBuffer::kHugeBytes) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % HostBuffer::kHugeBytes, 0u);
    }
  }
}

TEST(HostBuffer, MovesHandTheMemoryOver) {
  HostBuffer a(HostBuffer::kHugeBytes + 10);
  fill_and_check(a);
  const uint8_t* p = a.data();
  HostBuffer b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state
  EXPECT_EQ(a.size(), 0u);
  HostBuffer c(100);
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), HostBuffer::kHugeBytes + 10);
  fill_and_check(c);
  c.shrink(5);
  EXPECT_EQ(c.size(), 5u);
  c.shrink(50);
  EXPECT_EQ(c.size(), 5u);
}

}  // namespace
}  // namespace ds4::base
