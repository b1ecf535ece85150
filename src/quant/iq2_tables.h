// src/quant/iq2_tables.h: the IQ2_XXS codebook and sign table, plus field accessors.
// Owns: access to the generated tables (iq2_tables.inc, from tools/gen/gen_iq2_tables.py) and the
//   decoding of one 8-byte IQ2_XXS group header (model.md §3.2).
// Does not own: the tables' values (generated; never edit the .inc by hand) or any arithmetic.
#pragma once

#include <cstdint>
#include <cstring>

#include "quant/blocks.h"

namespace ds4::quant {

// kIq2xxsGrid[256]: byte j of an entry is the magnitude (8, 25 or 43) of element j of a group of
// 8 (ggml's iq2xxs_grid). kIq2Signs[128]: bit j set = element j negative (ggml's ksigns_iq2xs).
#include "quant/iq2_tables.inc"

inline constexpr int kIq2GridSize = 256;
inline constexpr int kIq2SignCount = 128;
inline constexpr uint8_t kIq2Levels[3] = {8, 25, 43};

constexpr uint8_t iq2xxs_grid_byte(int index, int j) {
  return static_cast<uint8_t>(kIq2xxsGrid[index] >> (8 * j));
}

// The decoded header of one 32-value group (ib32) of an IQ2_XXS block.
struct Iq2xxsGroup {
  uint8_t grid[4];   // codebook index of each sub-group of 8
  uint8_t signs[4];  // sign-table index (7 bits) of each sub-group of 8
  uint8_t scale;     // 4-bit s; the group multiplier is (2s + 1) / 8
};

inline Iq2xxsGroup iq2xxs_group(const BlockIQ2_XXS& b, int ib32) {
  uint32_t a = 0;
  uint32_t s = 0;
  std::memcpy(&a, &b.qs[4 * ib32], 4);
  std::memcpy(&s, &b.qs[4 * ib32 + 2], 4);
  Iq2xxsGroup g{};
  for (int k = 0; k < 4; ++k) {
    g.grid[k] = static_cast<uint8_t>(a >> (8 * k));
    g.signs[k] = static_cast<uint8_t>((s >> (7 * k)) & 127);
  }
  g.scale = static_cast<uint8_t>(s >> 28);
  return g;
}

inline void set_iq2xxs_group(BlockIQ2_XXS& b, int ib32, const Iq2xxsGroup& g) {
  uint32_t a = 0;
  uint32_t s = static_cast<uint32_t>(g.scale & 15) << 28;
  for (int k = 0; k < 4; ++k) {
    a |= static_cast<uint32_t>(g.grid[k]) << (8 * k);
    s |= static_cast<uint32_t>(g.signs[k] & 127) << (7 * k);
  }
  std::memcpy(&b.qs[4 * ib32], &a, 4);
  std::memcpy(&b.qs[4 * ib32 + 2], &s, 4);
}

}  // namespace ds4::quant
