// src/backend/cuda/kernels/planar_formats_test.cpp: the planar kernel's per-format code
// (planar_formats.cuh: pack_block, load, term, finish) run on the host exactly as one folding
// thread of matmul_planar.cu runs it -- blocks packed into the planes, each block's term formed
// from the planes, the terms added in block order -- must equal the CPU reference dot
// (quant/dot_ref.cpp) bit for bit, for every planar format, several row lengths, encoder output
// and random valid blocks. Needs the CUDA headers, not a GPU.
#include "backend/cuda/kernels/planar_formats.cuh"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "quant/activation.h"
#include "quant/dot.h"
#include "quant/iq2_tables.h"
#include "quant/quantize.h"

namespace ds4::backend::cuda::planar {
namespace {

using gguf::GgufType;

template <class F>
float planar_row(const uint8_t* planes, int64_t n_blocks_total, int64_t row, int64_t nb,
                 const uint8_t* x) {
  const Iq2Lookup t{quant::kIq2xxsGrid, quant::kIq2Signs};
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t blk = row * nb + b;
    const typename F::W w =
        F::load(planes + blk * F::kBody, planes + n_blocks_total * F::kBody + blk * F::kAux);
    acc = planar::add_term(acc, F::term(w, x + b * F::kXBytes, t));
  }
  return F::finish(acc);
}

float reference(GgufType t, const uint8_t* row, const uint8_t* x, int64_t nb) {
  const quant::DotKernels& k = quant::reference_dot_kernels();
  const auto* xk = reinterpret_cast<const BlockQ8_K*>(x);
  switch (t) {
    case GgufType::kQ8_0:
      return k.q8_0(reinterpret_cast<const BlockQ8_0*>(row), reinterpret_cast<const ActQ8_0*>(x),
                    nb);
    case GgufType::kQ2_K: return k.q2_k(reinterpret_cast<const BlockQ2_K*>(row), xk, nb);
    case GgufType::kQ4_K: return k.q4_k(reinterpret_cast<const BlockQ4_K*>(row), xk, nb);
    default: return k.iq2_xxs(reinterpret_cast<const BlockIQ2_XXS*>(row), xk, nb);
  }
}

template <class F>
void check_format(GgufType t, int64_t nb, bool random_blocks, uint32_t seed) {
  const int64_t rows = 7, block_elems = t == GgufType::kQ8_0 ? 32 : 256;
  const int64_t cols = nb * block_elems, block_bytes = gguf::block_bytes(t);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint8_t> w(static_cast<size_t>(rows * nb * block_bytes));
  if (random_blocks) {  // any bytes, with finite f16 scales
    for (uint8_t& v : w) v = static_cast<uint8_t>(rng());
    for (int64_t b = 0; b < rows * nb; ++b) {
      uint8_t* blk = w.data() + b * block_bytes;
      auto put_scale = [&](size_t off) {
        const uint16_t h = static_cast<uint16_t>((rng() & 0x83ffu) | ((8 + rng() % 14) << 10));
        std::memcpy(blk + off, &h, 2);
      };
      if (t == GgufType::kQ8_0) put_scale(offsetof(BlockQ8_0, d));
      if (t == GgufType::kQ2_K)
        put_scale(offsetof(BlockQ2_K, d)), put_scale(offsetof(BlockQ2_K, dmin));
      if (t == GgufType::kQ4_K)
        put_scale(offsetof(BlockQ4_K, d)), put_scale(offsetof(BlockQ4_K, dmin));
      if (t == GgufType::kIQ2_XXS) put_scale(offsetof(BlockIQ2_XXS, d));
    }
  } else {
    std::vector<float> src(static_cast<size_t>(rows * cols));
    for (float& v : src) v = normal(rng);
    ASSERT_TRUE(quant::quantize_rows(t, src.data(), w.data(), rows, cols, nullptr).is_ok());
  }
  std::vector<float> xf(static_cast<size_t>(cols));
  for (float& v : xf) v = 3.0f * normal(rng);
  std::vector<uint8_t> x(static_cast<size_t>(nb * F::kXBytes));
  if (t == GgufType::kQ8_0) {
    quant::quantize_act_q8_0(xf.data(), reinterpret_cast<ActQ8_0*>(x.data()), cols);
  } else {
    quant::quantize_act_q8_k(xf.data(), reinterpret_cast<BlockQ8_K*>(x.data()), cols);
  }
  // Pack every block as the device does, into planes of the same total size.
  const int64_t n_blocks = rows * nb;
  std::vector<uint8_t> planes(w.size() + 16, 0xcd);
  for (int64_t b = 0; b < n_blocks; ++b)
    ASSERT_TRUE(pack_block(t, w.data() + b * block_bytes, b, n_blocks, planes.data()));
  for (int64_t r = 0; r < rows; ++r) {
    const float want = reference(t, w.data() + r * nb * block_bytes, x.data(), nb);
    const float got = planar_row<F>(planes.data(), n_blocks, r, nb, x.data());
    EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want))
        << gguf::to_string(t) << " nb " << nb << (random_blocks ? " random" : " encoded") << " row "
        << r << ": planar " << got << " reference " << want << " seed " << seed;
  }
}

template <class F>
void check_all(GgufType t) {
  const uint32_t seed = std::random_device{}();
  for (int64_t nb : {1, 2, 5, 16, 33})
    for (bool random_blocks : {false, true})
      check_format<F>(t, nb, random_blocks, seed + static_cast<uint32_t>(nb));
}

TEST(CudaPlanarFormats, Q8_0MatchesTheReferenceBitForBit) { check_all<FmtQ8_0>(GgufType::kQ8_0); }
TEST(CudaPlanarFormats, Q2_KMatchesTheReferenceBitForBit) { check_all<FmtQ2K>(GgufType::kQ2_K); }
TEST(CudaPlanarFormats, Q4_KMatchesTheReferenceBitForBit) { check_all<FmtQ4K>(GgufType::kQ4_K); }
TEST(CudaPlanarFormats, IQ2_XXSMatchesTheReferenceBitForBit) {
  check_all<FmtIq2Xxs>(GgufType::kIQ2_XXS);
}

TEST(CudaPlanarFormats, OnlyTheBlockFormatsHavePlanes) {
  uint8_t src[256] = {}, dst[512] = {};
  EXPECT_FALSE(pack_block(GgufType::kF16, src, 0, 1, dst));
  EXPECT_FALSE(pack_block(GgufType::kF32, src, 0, 1, dst));
  EXPECT_TRUE(pack_block(GgufType::kQ8_0, src, 0, 1, dst));
}

}  // namespace
}  // namespace ds4::backend::cuda::planar
