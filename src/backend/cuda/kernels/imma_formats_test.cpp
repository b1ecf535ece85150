// src/backend/cuda/kernels/imma_formats_test.cpp: the tensor-core kernel's host+device pieces
// (imma_formats.cuh) on the host, without a GPU:
//   * the int8 decodes of IQ2_XXS and Q2_K blocks, read from the planar planes as the kernel reads
//     them, give every element's value as the reference defines it (quant/iq2_tables.h,
//     quant::q2_k_position), the group multipliers and the 4-bit mins;
//   * plain integer dots of the decoded operands (what the int8 products compute) give the
//     reference's block sums, q2k_summs its min sums, and folding Fmt*::from_sums of them in block
//     order equals the CPU reference dot (quant/dot_ref.cpp) bit for bit;
//   * the fragment addressing, fed through an emulation of mma.m16n8k32 written from the PTX ISA's
//     element-by-element fragment layouts, yields the tile products, and each fragment load of a
//     warp touches 32 different shared-memory banks with the kernel's padded rows.
#include "backend/cuda/kernels/imma_formats.cuh"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "quant/activation.h"
#include "quant/dot.h"
#include "quant/iq2_tables.h"
#include "quant/quant_test_util.h"
#include "quant/quantize.h"

namespace ds4::backend::cuda::imma {
namespace {

using gguf::GgufType;
using planar::FmtIq2Xxs;
using planar::FmtQ2K;
using planar::FmtQ8_0;
using quant::ActQ8_0;
using quant::BlockIQ2_XXS;
using quant::BlockQ2_K;
using quant::BlockQ8_0;
using quant::BlockQ8_K;

constexpr int kPitch = kTilePitch;

uint32_t word_at(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
int8_t byte_of(uint32_t w, int j) { return static_cast<int8_t>(w >> (8 * j)); }

// Rows of `nb` blocks of type t: quantized gaussian rows, or random valid blocks.
std::vector<uint8_t> make_rows(GgufType t, int64_t rows, int64_t nb, bool random_blocks,
                               std::mt19937& rng) {
  const int64_t block_bytes = gguf::block_bytes(t);
  const int64_t block_elems = t == GgufType::kQ8_0 ? 32 : 256;
  std::vector<uint8_t> w(static_cast<size_t>(rows * nb * block_bytes));
  if (random_blocks) {
    for (int64_t b = 0; b < rows * nb; ++b) {
      uint8_t* dst = w.data() + b * block_bytes;
      if (t == GgufType::kQ8_0) {
        const BlockQ8_0 v = quant::testing::random_q8_0(rng);
        std::memcpy(dst, &v, sizeof(v));
      } else if (t == GgufType::kQ2_K) {
        const BlockQ2_K v = quant::testing::random_q2_k(rng);
        std::memcpy(dst, &v, sizeof(v));
      } else {
        const BlockIQ2_XXS v = quant::testing::random_iq2_xxs(rng);
        std::memcpy(dst, &v, sizeof(v));
      }
    }
    return w;
  }
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> src(static_cast<size_t>(rows * nb * block_elems));
  for (float& v : src) v = normal(rng);
  EXPECT_TRUE(
      quant::quantize_rows(t, src.data(), w.data(), rows, nb * block_elems, nullptr).is_ok());
  return w;
}

// One encoded activation row of nb blocks (ActQ8_0 for Q8_0 weights, BlockQ8_K otherwise).
std::vector<uint8_t> make_activations(GgufType t, int64_t nb, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t cols = nb * (t == GgufType::kQ8_0 ? 32 : 256);
  std::vector<float> x(static_cast<size_t>(cols));
  for (float& v : x) v = 3.0f * normal(rng);
  if (t == GgufType::kQ8_0) {
    std::vector<uint8_t> out(static_cast<size_t>(nb) * sizeof(ActQ8_0));
    quant::quantize_act_q8_0(x.data(), reinterpret_cast<ActQ8_0*>(out.data()), cols);
    return out;
  }
  std::vector<uint8_t> out(static_cast<size_t>(nb) * sizeof(BlockQ8_K));
  quant::quantize_act_q8_k(x.data(), reinterpret_cast<BlockQ8_K*>(out.data()), cols);
  return out;
}

// The blocks packed into the planar planes, as the device's pack kernel lays them out.
std::vector<uint8_t> pack_planes(GgufType t, const std::vector<uint8_t>& w) {
  const int64_t block_bytes = gguf::block_bytes(t);
  const int64_t n_blocks = static_cast<int64_t>(w.size()) / block_bytes;
  std::vector<uint8_t> planes(w.size() + 16, 0xcd);
  for (int64_t b = 0; b < n_blocks; ++b)
    EXPECT_TRUE(planar::pack_block(t, w.data() + b * block_bytes, b, n_blocks, planes.data()));
  return planes;
}

// A block decoded the kernel's way: 64 words of int8 (element 4i + j in byte j of word i).
struct Decoded {
  uint32_t words[64];
  uint32_t scales[2];  // IQ2_XXS: group multipliers, one per byte
  uint32_t mins[4];    // Q2_K: 4-bit mins, one per byte
};

Decoded decode_iq2xxs(const uint8_t* body) {
  Decoded d{};
  for (int h = 0; h < 2; ++h) {
    uint32_t in[8];
    for (int i = 0; i < 8; ++i) in[i] = word_at(body + 32 * h + 4 * i);
    d.scales[h] = iq2xxs_decode_half(in, quant::kIq2xxsGrid, d.words + 32 * h);
  }
  return d;
}

Decoded decode_q2k(const uint8_t* body) {  // body = scales (16 bytes), then the codes
  Decoded d{};
  for (int h = 0; h < 2; ++h) {
    uint32_t q[8], sc[2];
    for (int i = 0; i < 8; ++i) q[i] = word_at(body + 16 + 32 * h + 4 * i);
    for (int i = 0; i < 2; ++i) sc[i] = word_at(body + 8 * h + 4 * i);
    q2k_decode_half(q, sc, d.words + 32 * h, d.mins + 2 * h);
  }
  return d;
}

// sum of decoded elements [k0, k0 + n) times the activation codes (what the products add).
int dot_codes(const uint32_t* words, const int8_t* x, int k0, int n) {
  int s = 0;
  for (int k = k0; k < k0 + n; ++k) s += byte_of(words[k / 4], k % 4) * x[k];
  return s;
}

float reference_dot(GgufType t, const uint8_t* row, const uint8_t* x, int64_t nb) {
  const quant::DotKernels& k = quant::reference_dot_kernels();
  const auto* xk = reinterpret_cast<const BlockQ8_K*>(x);
  if (t == GgufType::kQ8_0) {
    return k.q8_0(reinterpret_cast<const BlockQ8_0*>(row), reinterpret_cast<const ActQ8_0*>(x), nb);
  }
  if (t == GgufType::kQ2_K) return k.q2_k(reinterpret_cast<const BlockQ2_K*>(row), xk, nb);
  return k.iq2_xxs(reinterpret_cast<const BlockIQ2_XXS*>(row), xk, nb);
}

// Every row of the weights (packed) against one activation row, the way the kernel's thread
// forms an output: per block the integer sums from the decoded operands, the term from
// from_sums, added in block order, then finish. Also checks every decoded element.
void check_rows(GgufType t, int64_t nb, bool random_blocks, uint32_t seed) {
  SCOPED_TRACE(std::string(gguf::to_string(t)) + " nb " + std::to_string(nb) +
               (random_blocks ? " random" : " quantized") + " seed " + std::to_string(seed));
  constexpr int64_t kRows = 6;
  std::mt19937 rng(seed);
  const std::vector<uint8_t> w = make_rows(t, kRows, nb, random_blocks, rng);
  const std::vector<uint8_t> x = make_activations(t, nb, rng);
  const std::vector<uint8_t> planes = pack_planes(t, w);
  const int64_t n_blocks = kRows * nb, block_bytes = gguf::block_bytes(t);
  for (int64_t r = 0; r < kRows; ++r) {
    float acc = 0.0f;
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t blk = r * nb + b;
      const uint8_t* src = w.data() + blk * block_bytes;
      if (t == GgufType::kQ8_0) {
        BlockQ8_0 wb;
        std::memcpy(&wb, src, sizeof(wb));
        ActQ8_0 xb;
        std::memcpy(&xb, x.data() + b * sizeof(ActQ8_0), sizeof(xb));
        const uint8_t* body = planes.data() + blk * FmtQ8_0::kBody;
        uint32_t words[8];
        for (int i = 0; i < 8; ++i) words[i] = word_at(body + 4 * i);
        const uint16_t d =
            static_cast<uint16_t>(planes[n_blocks * FmtQ8_0::kBody + blk * 2] |
                                  planes[n_blocks * FmtQ8_0::kBody + blk * 2 + 1] << 8);
        ASSERT_EQ(d, wb.d);
        acc = planar::add_term(
            acc, FmtQ8_0::from_sums(planar::f16_bits(d), xb.d, dot_codes(words, xb.qs, 0, 32)));
      } else if (t == GgufType::kQ2_K) {
        BlockQ2_K wb;
        std::memcpy(&wb, src, sizeof(wb));
        BlockQ8_K xb;
        std::memcpy(&xb, x.data() + b * sizeof(BlockQ8_K), sizeof(xb));
        const Decoded d = decode_q2k(planes.data() + blk * FmtQ2K::kBody);
        int isum_ref = 0, summs_ref = 0;
        for (int e = 0; e < 256; ++e) {
          const quant::Q2KPosition p = quant::q2_k_position(e);
          const int v = ((wb.qs[p.byte] >> p.shift) & 3) * (wb.scales[p.sub_block] & 15);
          ASSERT_EQ(byte_of(d.words[e / 4], e % 4), v) << "element " << e;
          isum_ref += v * xb.qs[e];
        }
        for (int s = 0; s < 16; ++s) {
          ASSERT_EQ(byte_of(d.mins[s / 4], s % 4), wb.scales[s] >> 4) << "min " << s;
          summs_ref += xb.bsums[s] * (wb.scales[s] >> 4);
        }
        int isum = 0;  // eight K = 32 steps into one accumulator
        for (int ks = 0; ks < 8; ++ks) isum += dot_codes(d.words, xb.qs, 32 * ks, 32);
        ASSERT_EQ(isum, isum_ref);
        uint32_t bsums[8];
        std::memcpy(bsums, xb.bsums, sizeof(bsums));
        const int summs = q2k_summs(d.mins, bsums);
        ASSERT_EQ(summs, summs_ref);
        const uint8_t* aux = planes.data() + n_blocks * FmtQ2K::kBody + blk * 4;
        const uint16_t wd = static_cast<uint16_t>(aux[0] | aux[1] << 8);
        const uint16_t wdmin = static_cast<uint16_t>(aux[2] | aux[3] << 8);
        ASSERT_TRUE(wd == wb.d && wdmin == wb.dmin);
        acc += FmtQ2K::from_sums(xb.d, planar::f16_bits(wd), planar::f16_bits(wdmin), isum, summs);
      } else {
        BlockIQ2_XXS wb;
        std::memcpy(&wb, src, sizeof(wb));
        BlockQ8_K xb;
        std::memcpy(&xb, x.data() + b * sizeof(BlockQ8_K), sizeof(xb));
        const Decoded d = decode_iq2xxs(planes.data() + blk * FmtIq2Xxs::kBody);
        int bsum = 0, bsum_ref = 0;
        for (int g = 0; g < 8; ++g) {
          const quant::Iq2xxsGroup grp = quant::iq2xxs_group(wb, g);
          const int mult = static_cast<int>((d.scales[g / 4] >> (8 * (g % 4))) & 255u);
          ASSERT_EQ(mult, 2 * grp.scale + 1) << "group " << g;
          int sumi_ref = 0;
          for (int k = 0; k < 4; ++k) {
            const uint8_t signs = quant::kIq2Signs[grp.signs[k]];
            for (int j = 0; j < 8; ++j) {
              const int e = 32 * g + 8 * k + j;
              const int mag = quant::iq2xxs_grid_byte(grp.grid[k], j);
              const int v = ((signs >> j) & 1) ? -mag : mag;
              ASSERT_EQ(byte_of(d.words[e / 4], e % 4), v) << "element " << e;
              sumi_ref += v * xb.qs[e];
            }
          }
          bsum_ref += (2 * grp.scale + 1) * sumi_ref;
          bsum += mult * dot_codes(d.words, xb.qs, 32 * g, 32);  // one K step per group
        }
        ASSERT_EQ(bsum, bsum_ref);
        const uint8_t* aux = planes.data() + n_blocks * FmtIq2Xxs::kBody + blk * 2;
        const uint16_t wd = static_cast<uint16_t>(aux[0] | aux[1] << 8);
        ASSERT_EQ(wd, wb.d);
        acc += FmtIq2Xxs::from_sums(planar::f16_bits(wd), xb.d, bsum);
      }
    }
    const float got = t == GgufType::kQ8_0   ? FmtQ8_0::finish(acc)
                      : t == GgufType::kQ2_K ? FmtQ2K::finish(acc)
                                             : FmtIq2Xxs::finish(acc);
    const float want = reference_dot(t, w.data() + r * nb * block_bytes, x.data(), nb);
    EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want))
        << "row " << r << ": " << got << " vs reference " << want;
  }
}

void check_all(GgufType t) {
  const uint32_t seed = std::random_device{}();
  for (int64_t nb : {1, 3, 8, 17})
    for (bool random_blocks : {false, true})
      check_rows(t, nb, random_blocks, seed + static_cast<uint32_t>(nb));
}

TEST(CudaImmaFormats, Q8_0SumsFoldToTheReference) { check_all(GgufType::kQ8_0); }
TEST(CudaImmaFormats, Q2_KDecodeAndSumsFoldToTheReference) { check_all(GgufType::kQ2_K); }
TEST(CudaImmaFormats, IQ2_XXSDecodeAndSumsFoldToTheReference) { check_all(GgufType::kIQ2_XXS); }

TEST(CudaImmaFormats, SignBitsEqualTheSignTable) {
  for (uint32_t i = 0; i < 128; ++i) EXPECT_EQ(iq2_sign_bits(i), quant::kIq2Signs[i]) << i;
}

TEST(CudaImmaFormats, Dp2aTakesTheNamedBytes) {
  std::mt19937 rng(7);
  for (int n = 0; n < 1000; ++n) {
    const uint32_t a = rng(), b = rng();
    const int c = static_cast<int>(rng() % 2001) - 1000;
    const int h0 = static_cast<int16_t>(a & 0xffffu), h1 = static_cast<int16_t>(a >> 16);
    EXPECT_EQ(dp2a_lo(static_cast<int>(a), static_cast<int>(b), c),
              c + h0 * byte_of(b, 0) + h1 * byte_of(b, 1));
    EXPECT_EQ(dp2a_hi(static_cast<int>(a), static_cast<int>(b), c),
              c + h0 * byte_of(b, 2) + h1 * byte_of(b, 3));
  }
}

// mma.m16n8k32 (s8 x s8 -> s32) from the lanes' registers, with the fragment layouts restated
// from the PTX ISA element by element (independently of frag_*_word): A element i (0..15) of a
// lane is byte i % 4 of register i / 4, at row g for i < 4 or 8 <= i < 12 (g + 8 otherwise) and
// column 4t + i % 4 (+ 16 for i >= 8); B element i (0..7) at row 4t + i % 4 (+ 16 for i >= 4),
// column g; C element i at row g (+ 8 for i >= 2), column 2t + i % 2.
void mma_emulated(const uint32_t a[32][4], const uint32_t b[32][2], int d[32][4]) {
  int8_t am[16][32], bm[32][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 16; ++i) {
      const int row = (i < 4 || (i >= 8 && i < 12)) ? g : g + 8;
      const int col = 4 * t + (i & 3) + (i >= 8 ? 16 : 0);
      am[row][col] = byte_of(a[lane][i / 4], i % 4);
    }
    for (int i = 0; i < 8; ++i)
      bm[4 * t + (i & 3) + (i >= 4 ? 16 : 0)][g] = byte_of(b[lane][i / 4], i % 4);
  }
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) {
      const int row = g + (i >= 2 ? 8 : 0), col = 2 * t + (i & 1);
      int s = 0;
      for (int k = 0; k < 32; ++k) s += am[row][k] * bm[k][col];
      d[lane][i] = s;
    }
  }
}

TEST(CudaImmaFormats, FragmentAddressingMultipliesTheTiles) {
  std::mt19937 rng(11);
  // Tiles as the kernel stages them: 16 weight rows and 8 slots of 256 int8, kPitch words apart.
  std::vector<uint32_t> at(16 * kPitch), bt(8 * kPitch);
  for (uint32_t& v : at) v = rng();
  for (uint32_t& v : bt) v = rng();
  auto a_elem = [&](int row, int k) { return byte_of(at[row * kPitch + k / 4], k % 4); };
  auto b_elem = [&](int slot, int k) { return byte_of(bt[slot * kPitch + k / 4], k % 4); };
  for (int ks = 0; ks < 8; ++ks) {  // the K step: elements 32 ks .. 32 ks + 31
    uint32_t a[32][4], b[32][2];
    for (int lane = 0; lane < 32; ++lane) {
      for (int r = 0; r < 4; ++r) a[lane][r] = at[frag_a_word(lane, r, kPitch) + 8 * ks];
      for (int r = 0; r < 2; ++r) b[lane][r] = bt[frag_b_word(lane, r, kPitch) + 8 * ks];
    }
    int d[32][4];
    mma_emulated(a, b, d);
    for (int lane = 0; lane < 32; ++lane) {
      for (int i = 0; i < 4; ++i) {
        const int row = frag_c_row(lane, i), slot = frag_c_col(lane, i);
        ASSERT_TRUE(row >= 0 && row < 16 && slot >= 0 && slot < 8);
        int want = 0;
        for (int k = 32 * ks; k < 32 * ks + 32; ++k) want += a_elem(row, k) * b_elem(slot, k);
        EXPECT_EQ(d[lane][i], want) << "K step " << ks << " lane " << lane << " element " << i;
      }
    }
  }
}

TEST(CudaImmaFormats, FragmentLoadsUseEveryBankOnce) {
  for (int ks = 0; ks < 8; ++ks) {
    for (int r = 0; r < 4; ++r) {
      std::set<int> banks;
      for (int lane = 0; lane < 32; ++lane)
        banks.insert((frag_a_word(lane, r, kPitch) + 8 * ks) % 32);
      EXPECT_EQ(banks.size(), 32u) << "A register " << r << " K step " << ks;
    }
    for (int r = 0; r < 2; ++r) {
      std::set<int> banks;
      for (int lane = 0; lane < 32; ++lane)
        banks.insert((frag_b_word(lane, r, kPitch) + 8 * ks) % 32);
      EXPECT_EQ(banks.size(), 32u) << "B register " << r << " K step " << ks;
    }
  }
}

}  // namespace
}  // namespace ds4::backend::cuda::imma
