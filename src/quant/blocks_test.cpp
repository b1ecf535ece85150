// src/quant/blocks_test.cpp: block layouts agree with the GGUF type table and with model.md §3.2.
#include "quant/blocks.h"

#include <gtest/gtest.h>

#include "gguf/types.h"

namespace ds4::quant {
namespace {

using gguf::GgufType;

void expect_geometry(GgufType t, size_t bytes, int elems) {
  const auto info = gguf::type_info(static_cast<uint32_t>(t));
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->block_bytes, bytes) << info->name;
  EXPECT_EQ(info->block_elems, static_cast<uint32_t>(elems)) << info->name;
}

// Protects: the struct sizes equal the bytes the GGUF table (and so every file) uses per block.
TEST(QuantBlocks, SizesMatchGgufTypeTable) {
  expect_geometry(GgufType::kQ8_0, sizeof(BlockQ8_0), kQ8_0BlockElems);
  expect_geometry(GgufType::kQ2_K, sizeof(BlockQ2_K), kSuperBlockElems);
  expect_geometry(GgufType::kQ4_K, sizeof(BlockQ4_K), kSuperBlockElems);
  expect_geometry(GgufType::kIQ2_XXS, sizeof(BlockIQ2_XXS), kSuperBlockElems);
  expect_geometry(GgufType::kQ8_K, sizeof(BlockQ8_K), kSuperBlockElems);
}

// Protects: Q2_K addressing equals the literal formula of model.md §3.2 for all 256 elements.
TEST(QuantBlocks, Q2KPositionFollowsSpecFormula) {
  for (int e = 0; e < kSuperBlockElems; ++e) {
    const int half = e / 128, r = e % 128, j = r / 32, l = r % 32;
    const Q2KPosition p = q2_k_position(e);
    EXPECT_EQ(p.byte, half * 32 + l) << e;
    EXPECT_EQ(p.shift, 2 * j) << e;
    EXPECT_EQ(p.sub_block, half * 8 + 2 * j + (l >= 16 ? 1 : 0)) << e;
  }
}

// Protects: Q4_K nibble addressing (byte (j/2)*32 + l, low nibble for even j).
TEST(QuantBlocks, Q4KPositionFollowsSpecFormula) {
  for (int e = 0; e < kSuperBlockElems; ++e) {
    const int j = e / 32, l = e % 32;
    const Q4KPosition p = q4_k_position(e);
    EXPECT_EQ(p.byte, (j / 2) * 32 + l) << e;
    EXPECT_EQ(p.high, j % 2 == 1) << e;
    EXPECT_EQ(p.sub_block, j) << e;
  }
}

// Protects: the 6-bit scale/min unpacking. Bytes packed by hand for
// sc = {1,2,3,4,33,47,62,63}, m = {5,6,7,8,17,40,50,63}.
TEST(QuantBlocks, Q4KScaleMinUnpacksHandPackedBytes) {
  const uint8_t scales[12] = {129, 130, 195, 196, 69, 134, 199, 200, 17, 143, 46, 255};
  const int sc[8] = {1, 2, 3, 4, 33, 47, 62, 63};
  const int m[8] = {5, 6, 7, 8, 17, 40, 50, 63};
  for (int j = 0; j < 8; ++j) {
    const ScaleMin sm = q4_k_scale_min(scales, j);
    EXPECT_EQ(sm.scale, sc[j]) << j;
    EXPECT_EQ(sm.min, m[j]) << j;
  }
}

}  // namespace
}  // namespace ds4::quant
