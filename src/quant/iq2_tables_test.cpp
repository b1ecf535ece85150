// src/quant/iq2_tables_test.cpp: the generated IQ2 tables have the structure and values of the
// public GGML tables (iq2xxs_grid, ksigns_iq2xs).
#include "quant/iq2_tables.h"

#include <gtest/gtest.h>

#include <set>

namespace ds4::quant {
namespace {

// Protects: every codebook entry is a pattern of 8 magnitudes from {8, 25, 43} and no two entries
// are equal (a duplicate would make an index unreachable).
TEST(QuantIq2Tables, GridEntriesAreDistinctThreeLevelPatterns) {
  std::set<uint64_t> seen;
  for (int g = 0; g < kIq2GridSize; ++g) {
    for (int j = 0; j < 8; ++j) {
      const uint8_t b = iq2xxs_grid_byte(g, j);
      EXPECT_TRUE(b == 8 || b == 25 || b == 43) << "entry " << g << " byte " << j;
    }
    seen.insert(kIq2xxsGrid[g]);
  }
  EXPECT_EQ(seen.size(), 256u);
}

// Protects: the published table is listed in ascending numeric order; a mistyped digit in the
// generator would very likely break the order.
TEST(QuantIq2Tables, GridIsAscending) {
  for (int g = 1; g < kIq2GridSize; ++g) EXPECT_LT(kIq2xxsGrid[g - 1], kIq2xxsGrid[g]) << g;
}

// Protects: spot values as printed in ggml-common.h's iq2xxs_grid, and a checksum (FNV-1a 64 over
// the little-endian bytes) of the whole table taken when it was checked against two public copies.
TEST(QuantIq2Tables, GridSpotValuesAndChecksum) {
  EXPECT_EQ(kIq2xxsGrid[0], 0x0808080808080808ull);
  EXPECT_EQ(kIq2xxsGrid[1], 0x080808080808082bull);
  EXPECT_EQ(kIq2xxsGrid[2], 0x0808080808081919ull);
  EXPECT_EQ(kIq2xxsGrid[200], 0x192b081908080808ull);
  EXPECT_EQ(kIq2xxsGrid[255], 0x2b2b2b1908081908ull);
  uint64_t h = 0xcbf29ce484222325ull;
  for (int g = 0; g < kIq2GridSize; ++g) {
    for (int j = 0; j < 8; ++j) {
      h ^= iq2xxs_grid_byte(g, j);
      h *= 0x100000001b3ull;
    }
  }
  EXPECT_EQ(h, 0xbb4ee025b5ac6e8eull);
}

// Protects: ksigns_iq2xs[i] = i with bit 7 = parity of i, so every pattern has an even number of
// negatives; spot values from the public table.
TEST(QuantIq2Tables, SignsAreIndexPlusParityBit) {
  for (int i = 0; i < kIq2SignCount; ++i) {
    EXPECT_EQ(kIq2Signs[i] & 127, i);
    EXPECT_EQ(__builtin_popcount(kIq2Signs[i]) % 2, 0) << i;
  }
  EXPECT_EQ(kIq2Signs[0], 0);
  EXPECT_EQ(kIq2Signs[1], 129);
  EXPECT_EQ(kIq2Signs[3], 3);
  EXPECT_EQ(kIq2Signs[124], 252);
  EXPECT_EQ(kIq2Signs[127], 255);
}

// Protects: group header (de)coding: byte k of A = grid index, B bits 7k.. = signs, B >> 28 = s.
TEST(QuantIq2Tables, GroupHeaderRoundTrip) {
  BlockIQ2_XXS b{};
  const Iq2xxsGroup g{{0, 1, 255, 2}, {0, 1, 127, 3}, 3};
  set_iq2xxs_group(b, 5, g);
  EXPECT_EQ(b.qs[20], 0x0100);  // A low half: grid 0, 1
  EXPECT_EQ(b.qs[21], 0x02ff);  // A high half: grid 255, 2
  const uint32_t signs = (1u << 7) | (127u << 14) | (3u << 21) | (3u << 28);
  EXPECT_EQ(b.qs[22], signs & 0xffff);
  EXPECT_EQ(b.qs[23], signs >> 16);
  const Iq2xxsGroup back = iq2xxs_group(b, 5);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(back.grid[k], g.grid[k]);
    EXPECT_EQ(back.signs[k], g.signs[k]);
  }
  EXPECT_EQ(back.scale, 3);
}

}  // namespace
}  // namespace ds4::quant
