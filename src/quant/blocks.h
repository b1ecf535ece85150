// src/quant/blocks.h: byte layouts of the quantised blocks DwarfStar reads, writes and multiplies.
// Owns: the packed little-endian block structs (model.md §3.2), their size checks, and the small
//   bit-unpacking helpers every decoder shares (Q4_K 6-bit scales, Q2_K element addressing).
// Does not own: the type-id table (gguf/types.h; blocks_test checks these sizes against it), the
//   decode arithmetic (dequantize.h) or the dot products (dot.h).
//
// The structs have no padding by construction (every member is naturally aligned at its offset),
// so they map bytes of a GGUF tensor directly on a little-endian host. Scales stored as IEEE half
// are kept as raw uint16_t bits; decode them with ds4::f16_to_f32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "gguf/types.h"

namespace ds4::quant {

inline constexpr int kQ8_0BlockElems = 32;    // Q8_0 storage and activation blocks
inline constexpr int kSuperBlockElems = 256;  // every K-quant and IQ2_XXS block ("QK_K")

// Q8_0 storage: x[i] = f16(d) * qs[i].
struct BlockQ8_0 {
  uint16_t d;  // f16 bits
  int8_t qs[kQ8_0BlockElems];
};

// Q2_K: 16 sub-blocks of 16 values; scales[s] holds a 4-bit scale (low nibble) and a 4-bit min
// (high nibble); qs packs four 2-bit values per byte (see q2_k_position()).
struct BlockQ2_K {
  uint8_t scales[16];
  uint8_t qs[64];
  uint16_t d;     // f16 bits, multiplies the 4-bit scales
  uint16_t dmin;  // f16 bits, multiplies the 4-bit mins
};

// Q4_K: 8 sub-blocks of 32 values with 6-bit scales and mins packed into 12 bytes
// (see q4_k_scale_min()); qs holds 4-bit values, two sub-blocks per 32-byte run.
struct BlockQ4_K {
  uint16_t d;     // f16 bits
  uint16_t dmin;  // f16 bits
  uint8_t scales[12];
  uint8_t qs[128];
};

// IQ2_XXS: per 32 values, 8 bytes read as two little-endian u32 A, B: byte k of A is a codebook
// index for values 8k..8k+7, bits 7k..7k+6 of B a sign-table index, B >> 28 a 4-bit scale.
struct BlockIQ2_XXS {
  uint16_t d;  // f16 bits
  uint16_t qs[32];
};

// Q8_K: activation-only block for the K-quant and IQ2_XXS dots; x[i] = d * qs[i].
struct BlockQ8_K {
  float d;
  int8_t qs[kSuperBlockElems];
  int16_t bsums[16];  // bsums[g] = sum of qs[16g .. 16g+15]
};

// Q8_0 *activations*: unlike storage Q8_0, the scale stays float32 (model.md §3.3).
struct ActQ8_0 {
  float d;
  int8_t qs[kQ8_0BlockElems];
};

// Sizes and offsets are part of the file format, and must agree with the GGUF type table.
static_assert(sizeof(BlockQ8_0) == gguf::block_bytes(gguf::GgufType::kQ8_0));
static_assert(sizeof(BlockQ2_K) == gguf::block_bytes(gguf::GgufType::kQ2_K));
static_assert(sizeof(BlockQ4_K) == gguf::block_bytes(gguf::GgufType::kQ4_K));
static_assert(sizeof(BlockIQ2_XXS) == gguf::block_bytes(gguf::GgufType::kIQ2_XXS));
static_assert(sizeof(BlockQ8_K) == gguf::block_bytes(gguf::GgufType::kQ8_K));
static_assert(sizeof(BlockQ8_0) == 34 && offsetof(BlockQ8_0, qs) == 2);
static_assert(sizeof(BlockQ2_K) == 84 && offsetof(BlockQ2_K, qs) == 16 &&
              offsetof(BlockQ2_K, d) == 80 && offsetof(BlockQ2_K, dmin) == 82);
static_assert(sizeof(BlockQ4_K) == 144 && offsetof(BlockQ4_K, scales) == 4 &&
              offsetof(BlockQ4_K, qs) == 16);
static_assert(sizeof(BlockIQ2_XXS) == 66 && offsetof(BlockIQ2_XXS, qs) == 2);
static_assert(sizeof(BlockQ8_K) == 292 && offsetof(BlockQ8_K, qs) == 4 &&
              offsetof(BlockQ8_K, bsums) == 260);
static_assert(sizeof(ActQ8_0) == 36 && offsetof(ActQ8_0, qs) == 4);
static_assert(std::is_standard_layout_v<BlockQ8_0> && std::is_trivially_copyable_v<BlockQ8_0>);
static_assert(std::is_standard_layout_v<BlockQ2_K> && std::is_trivially_copyable_v<BlockQ2_K>);
static_assert(std::is_standard_layout_v<BlockQ4_K> && std::is_trivially_copyable_v<BlockQ4_K>);
static_assert(std::is_standard_layout_v<BlockIQ2_XXS> &&
              std::is_trivially_copyable_v<BlockIQ2_XXS>);
static_assert(std::is_standard_layout_v<BlockQ8_K> && std::is_trivially_copyable_v<BlockQ8_K>);

// Q4_K sub-block j (0..7): its 6-bit scale and 6-bit min (ggml's "get_scale_min_k4" layout).
// Bytes 0-3 hold scale j (low 6 bits) and the top 2 bits of scale j+4; bytes 4-7 the same for the
// mins; bytes 8-11 the low nibbles of scale j+4 (low) and min j+4 (high).
struct ScaleMin {
  uint8_t scale;
  uint8_t min;
};
constexpr ScaleMin q4_k_scale_min(const uint8_t* scales, int j) {
  if (j < 4) {
    return {static_cast<uint8_t>(scales[j] & 63), static_cast<uint8_t>(scales[j + 4] & 63)};
  }
  return {static_cast<uint8_t>((scales[j + 4] & 0x0F) | ((scales[j - 4] >> 6) << 4)),
          static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4))};
}

// Where element e (0..255) of a Q2_K block lives: byte qs[byte], bits shift..shift+1, and its
// sub-block (scale index), which is always e / 16.
struct Q2KPosition {
  int byte;
  int shift;
  int sub_block;
};
constexpr Q2KPosition q2_k_position(int e) {
  const int half = e / 128;
  const int r = e % 128;
  return {half * 32 + r % 32, 2 * (r / 32), e / 16};
}

// Where element e (0..255) of a Q4_K block lives: byte qs[byte], low nibble when !high.
struct Q4KPosition {
  int byte;
  bool high;
  int sub_block;
};
constexpr Q4KPosition q4_k_position(int e) {
  const int j = e / 32;
  return {(j / 2) * 32 + e % 32, (j & 1) != 0, j};
}

}  // namespace ds4::quant
