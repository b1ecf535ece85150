// Protects: the checksum of the disk KV cache's files (checksum.h). Files on disk depend on every
// bit of it, so its values are pinned (and were checked against a separate script written from
// the definition in checksum.h); the AVX2 loop gives the portable loop's bits; any split of the
// input gives the one-shot digest; flipped bits, reordered stripes or blocks, a trailing zero
// byte and another seed all change it.
#include "base/checksum.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string_view>

#include "base/checksum_kernels.h"

namespace ds4::base {
namespace {

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 31 + 7);
  return v;
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::span<const uint8_t> bytes_of(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(Checksum, ValuesArePinned) {
  EXPECT_EQ(checksum64({}), 0x48218226ff3cd4bfull);
  EXPECT_EQ(checksum64(bytes_of("abc")), 0x427ba64acddd77f2ull);
  EXPECT_EQ(checksum64(bytes_of("abc"), 1), 0x912d1e19d412514bull);
  EXPECT_EQ(checksum64(pattern(1000)), 0x1518f08d9ea88c50ull);
  EXPECT_EQ(checksum64(pattern(3 * kChecksumBlockBytes + 77), 42), 0xbfaa088dc7604ea7ull);
}

TEST(Checksum, Avx2LoopGivesThePortableBits) {
  const checksum_detail::StripeKernel avx2 = checksum_detail::stripes_avx2();
  if (avx2 == nullptr) GTEST_SKIP() << "no AVX2 on this CPU or build: only the portable loop runs";
  for (const size_t stripes : {size_t{1}, size_t{3}, size_t{512}}) {
    const auto data = random_bytes(stripes * checksum_detail::kStripeBytes, 7);
    std::mt19937_64 rng(stripes);
    uint64_t acc1[16], key1[16], acc2[16], key2[16];
    for (int l = 0; l < 16; ++l) {
      acc1[l] = acc2[l] = rng();
      key1[l] = key2[l] = rng();
    }
    checksum_detail::stripes_portable(data.data(), stripes, acc1, key1);
    avx2(data.data(), stripes, acc2, key2);
    EXPECT_TRUE(std::equal(acc1, acc1 + 16, acc2)) << stripes;
    EXPECT_TRUE(std::equal(key1, key1 + 16, key2)) << stripes;
  }
}

TEST(Checksum, AnySplitGivesTheOneShotDigest) {
  const size_t block = kChecksumBlockBytes;
  for (const size_t n : {size_t{0}, size_t{1}, size_t{127}, size_t{128}, size_t{129}, block - 1,
                         block, block + 1, 3 * block + 4099}) {
    const auto data = random_bytes(n, static_cast<uint32_t>(n));
    const uint64_t want = checksum64(data, 5);
    std::mt19937 rng(static_cast<uint32_t>(n) + 1);
    for (int trial = 0; trial < 4; ++trial) {
      Checksum c(5);
      size_t at = 0;
      while (at < n) {
        // Pieces of every size class: bytes, stripes, around the block size.
        const size_t sizes[] = {1, 100, 4096, block - 48, block, block + 300};
        const size_t take = std::min(n - at, sizes[rng() % 6]);
        c.update(std::span(data).subspan(at, take));
        at += take;
        if (rng() % 3 == 0) {
          EXPECT_EQ(c.digest(), checksum64(std::span(data).first(at), 5));
        }
      }
      EXPECT_EQ(c.digest(), want) << n;
      EXPECT_EQ(c.bytes(), n);
    }
  }
}

// Blocks hashed apart (checksum_block at their indexes) and added as digests continue the stream
// exactly as update() of their bytes would, after a first block fed as bytes and before a tail.
TEST(Checksum, BlocksHashedApartGiveTheStreamDigest) {
  const size_t block = kChecksumBlockBytes;
  const auto data = random_bytes(6 * block + 777, 11);
  Checksum c(9);
  c.update(std::span(data).first(block));
  ASSERT_TRUE(c.at_block_boundary());
  std::vector<uint64_t> digests;
  for (uint64_t i = 1; i < 6; ++i) {
    digests.push_back(checksum_block(std::span(data).subspan(i * block, block), 9, i));
  }
  c.add_blocks(digests);
  EXPECT_EQ(c.blocks(), 6u);
  EXPECT_EQ(c.bytes(), 6 * block);
  EXPECT_EQ(c.digest(), checksum64(std::span(data).first(6 * block), 9));
  c.update(std::span(data).subspan(6 * block));
  EXPECT_EQ(c.digest(), checksum64(data, 9));
  EXPECT_NE(checksum_block(std::span(data).subspan(block, block), 9, 2), digests[0]);  // placed
}

TEST(Checksum, DamageChangesTheDigest) {
  const auto data = random_bytes(300, 11);
  std::set<uint64_t> seen = {checksum64(data)};
  for (size_t bit = 0; bit < data.size() * 8; ++bit) {
    auto d = data;
    d[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    seen.insert(checksum64(d));
  }
  EXPECT_EQ(seen.size(), 1 + data.size() * 8);  // every single-bit flip, all different
  // Two stripes swapped, and two whole blocks swapped.
  auto swapped = data;
  std::swap_ranges(swapped.begin(), swapped.begin() + 128, swapped.begin() + 128);
  EXPECT_NE(checksum64(swapped), checksum64(data));
  auto big = random_bytes(2 * kChecksumBlockBytes, 12);
  auto blocks = big;
  std::swap_ranges(blocks.begin(), blocks.begin() + kChecksumBlockBytes,
                   blocks.begin() + kChecksumBlockBytes);
  EXPECT_NE(checksum64(blocks), checksum64(big));
  // A trailing zero byte (the last stripe is zero-padded: the length tells them apart), zeros of
  // other lengths, another seed.
  auto longer = data;
  longer.push_back(0);
  EXPECT_NE(checksum64(longer), checksum64(data));
  EXPECT_NE(checksum64(std::vector<uint8_t>(128)), checksum64(std::vector<uint8_t>(256)));
  EXPECT_NE(checksum64(data, 1), checksum64(data, 2));
}

}  // namespace
}  // namespace ds4::base
