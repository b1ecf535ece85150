// src/backend/cuda/kernels/matmul_q.cu: weight-row dots on the device (see matmul_q.cuh for the
// contract; the activation encoders are encode_q.cu's).
// Owns: one dot kernel per weight type
//   (integer block sums exact, per-block float terms formed as in quant/dot_ref.cpp), and the
//   launchers with their grid maths and argument checks.
// Does not own: the block layouts (quant/blocks.h) or the IQ2 tables (quant/iq2_tables.inc).
//
// This file is compiled without fast-math and with -fmad=false (src/backend/CMakeLists.txt), so
// every float product and sum is rounded on its own, as in the CPU code built with
// -ffp-contract=off; divisions are IEEE (-prec-div) and subnormals are kept (no -ftz).
//
// Dot design: one warp per (slot, output row), eight warps per CTA. The lanes of a warp split the
// row's blocks (for the 256-value formats, 8 lanes per block, each one sub-block; for Q8_0, 4 lanes
// per block); a block's integer sums are reduced exactly across its lanes, then its leader lane
// forms the block's float term with dot_ref.cpp's expression, and lane 0 folds the terms in block
// order (as dot_ref.cpp: Q8_0 by one fused multiply-add); the warp's closing reduction adds the
// other lanes' zeros to that sum, which leaves it unchanged. F16 and F32 rows accumulate exact
// products in double and round once (as the reference does, up to the order of the double sum);
// F16 products of one matrix in one row group take matmul_f16_rows.cu's float kernel instead.
#include <cuda_fp16.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "backend/cuda/check.h"
#include "backend/cuda/kernels/device_math.cuh"
#include "backend/cuda/kernels/iq2_tables.cuh"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/launch_limits.h"
#include "backend/cuda/kernels/matmul_f16_rows.cuh"
#include "backend/cuda/kernels/matmul_planar.cuh"
#include "backend/cuda/kernels/matmul_q.cuh"
#include "backend/cuda/kernels/planar_formats.cuh"
#include "base/check.h"
#include "quant/blocks.h"

namespace ds4::backend::cuda {
namespace {

using gguf::GgufType;
using quant::ActQ8_0;
using quant::BlockIQ2_XXS;
using quant::BlockQ2_K;
using quant::BlockQ4_K;
using quant::BlockQ8_0;
using quant::BlockQ8_K;

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kWarpSize = 32;
constexpr int kWarpsPerCta = 8;
constexpr int kCtaThreads = kWarpSize * kWarpsPerCta;
constexpr int64_t kWeightAlign = 16;  // the Q4_K dot reads 16-byte vectors

// ---- small device helpers ----

__device__ __forceinline__ uint16_t load_u16(const uint8_t* p) {
  return *reinterpret_cast<const uint16_t*>(p);
}
__device__ __forceinline__ float load_f32(const uint8_t* p) {
  return *reinterpret_cast<const float*>(p);
}
__device__ __forceinline__ int load_i32(const uint8_t* p) {
  return *reinterpret_cast<const int*>(p);
}
__device__ __forceinline__ int load_i16(const uint8_t* p) {
  return *reinterpret_cast<const int16_t*>(p);
}
// Two little-endian u16 as one u32 (for 2-byte aligned block fields).
__device__ __forceinline__ uint32_t pack2(uint16_t lo, uint16_t hi) {
  return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
}

// Adds this iteration's block terms (held by each group's leader lane) to lane 0's accumulator
// in block order, so a row's float terms are summed exactly as the CPU reference sums them
// (planar::add_term: a float term added, a Q8_0 term by one fused multiply-add).
template <int kLanes, class Term>
__device__ __forceinline__ void add_in_block_order(Term term, int base, int nb, int lane,
                                                   float* acc) {
#pragma unroll
  for (int g = 0; g < kWarpSize / kLanes; ++g) {
    const Term t = planar::shfl_term(term, g * kLanes, kWarpSize);
    if (lane == 0 && base + g < nb) *acc = planar::add_term(*acc, t);
  }
}

// ---- dots: Dot::partial returns one lane's share of the row; Dot::finish maps the warp sum ----

// Q8_0: 4 lanes per block, 8 values each; term = {f16(w.d) * x.d, (float)isum}, folded by fma.
struct DotQ8_0 {
  using Acc = float;
  static constexpr int kLanes = 4;
  __device__ static float partial(const uint8_t* w, const uint8_t* x, int nb, int lane) {
    const int part = lane % kLanes;
    float acc = 0.0f;
    for (int base = 0; base < nb; base += kWarpSize / kLanes) {
      const int b = base + lane / kLanes;
      const bool valid = b < nb;
      const uint8_t* wb = w + static_cast<int64_t>(b) * sizeof(BlockQ8_0);
      const uint8_t* xb = x + static_cast<int64_t>(b) * sizeof(ActQ8_0);
      int isum = 0;
      if (valid) {
        const uint16_t* wq =
            reinterpret_cast<const uint16_t*>(wb + offsetof(BlockQ8_0, qs) + 8 * part);
        const uint8_t* xq = xb + offsetof(ActQ8_0, qs) + 8 * part;
        isum = __dp4a(static_cast<int>(pack2(wq[0], wq[1])), load_i32(xq), isum);
        isum = __dp4a(static_cast<int>(pack2(wq[2], wq[3])), load_i32(xq + 4), isum);
      }
      isum = group_sum<kLanes>(isum);
      planar::FmaTerm term{};
      if (valid && part == 0) {
        const float scale = f16_bits_to_float(load_u16(wb + offsetof(BlockQ8_0, d))) *
                            load_f32(xb + offsetof(ActQ8_0, d));
        term = {scale, static_cast<float>(isum)};
      }
      add_in_block_order<kLanes>(term, base, nb, lane, &acc);
    }
    return acc;
  }
  __device__ static float finish(float s) { return s; }
};

// Q2_K: 8 lanes per block. Lane p reads qs bytes 8p..8p+7, which hold, at shift 2k, the values
// e = h*128 + 32k + 8(p%4) + i (h = p/4, i < 8) of sub-block h*8 + 2k + (p%4)/2 (q2_k_position).
// term = (x.d * f16(d)) * (float)isum - (x.d * f16(dmin)) * (float)summs.
struct DotQ2K {
  using Acc = float;
  static constexpr int kLanes = 8;
  __device__ static float partial(const uint8_t* w, const uint8_t* x, int nb, int lane) {
    const int p = lane % kLanes;
    const int h = p / 4;
    const int q4 = p % 4;
    const int odd = q4 / 2;
    float acc = 0.0f;
    for (int base = 0; base < nb; base += kWarpSize / kLanes) {
      const int b = base + lane / kLanes;
      const bool valid = b < nb;
      const uint8_t* wb = w + static_cast<int64_t>(b) * sizeof(BlockQ2_K);
      const uint8_t* xb = x + static_cast<int64_t>(b) * sizeof(BlockQ8_K);
      int isum = 0;
      int summs = 0;
      if (valid) {
        const uint8_t* wq = wb + offsetof(BlockQ2_K, qs) + 8 * p;
        const uint32_t q0 = static_cast<uint32_t>(load_i32(wq));
        const uint32_t q1 = static_cast<uint32_t>(load_i32(wq + 4));
        // scales[h*8 .. h*8+7]; this lane's sub-blocks are h*8 + 2k + odd.
        const uint8_t* sc = wb + offsetof(BlockQ2_K, scales) + 8 * h;
        const uint32_t s_lo = static_cast<uint32_t>(load_i32(sc));
        const uint32_t s_hi = static_cast<uint32_t>(load_i32(sc + 4));
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const int si = 2 * k + odd;  // 0..7 within this half's scales
          const int sbyte = static_cast<int>(((si < 4 ? s_lo : s_hi) >> (8 * (si % 4))) & 0xffu);
          const uint8_t* xq = xb + offsetof(BlockQ8_K, qs) + 128 * h + 32 * k + 8 * q4;
          int sub = __dp4a(static_cast<int>((q0 >> (2 * k)) & 0x03030303u), load_i32(xq), 0);
          sub = __dp4a(static_cast<int>((q1 >> (2 * k)) & 0x03030303u), load_i32(xq + 4), sub);
          isum += (sbyte & 15) * sub;
          // Two lanes share each sub-block; the even one counts its min term.
          if (p % 2 == 0) {
            const int s = 8 * h + si;
            summs += load_i16(xb + offsetof(BlockQ8_K, bsums) + 2 * s) * (sbyte >> 4);
          }
        }
      }
      isum = group_sum<kLanes>(isum);
      summs = group_sum<kLanes>(summs);
      float term = 0.0f;
      if (valid && p == 0) {
        const float xd = load_f32(xb + offsetof(BlockQ8_K, d));
        const float dall = xd * f16_bits_to_float(load_u16(wb + offsetof(BlockQ2_K, d)));
        const float dmin = xd * f16_bits_to_float(load_u16(wb + offsetof(BlockQ2_K, dmin)));
        term = dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
      }
      add_in_block_order<kLanes>(term, base, nb, lane, &acc);
    }
    return acc;
  }
  __device__ static float finish(float s) { return s; }
};

// quant::q4_k_scale_min on device: the 6-bit scale and min of Q4_K sub-block j.
__device__ __forceinline__ void q4_k_scale_min(const uint8_t* s, int j, int* scale, int* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
    *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Q4_K: 8 lanes per block, lane j = sub-block j: values 32j + l live in qs[(j/2)*32 + l], low
// nibble for even j (q4_k_position). term as for Q2_K.
struct DotQ4K {
  using Acc = float;
  static constexpr int kLanes = 8;
  __device__ static float partial(const uint8_t* w, const uint8_t* x, int nb, int lane) {
    const int j = lane % kLanes;
    const int shift = 4 * (j & 1);
    float acc = 0.0f;
    for (int base = 0; base < nb; base += kWarpSize / kLanes) {
      const int b = base + lane / kLanes;
      const bool valid = b < nb;
      const uint8_t* wb = w + static_cast<int64_t>(b) * sizeof(BlockQ4_K);
      const uint8_t* xb = x + static_cast<int64_t>(b) * sizeof(BlockQ8_K);
      int isum = 0;
      int summs = 0;
      if (valid) {
        // 144-byte blocks in 16-byte aligned rows: qs + 32 * (j / 2) is 16-byte aligned.
        const uint4* wq =
            reinterpret_cast<const uint4*>(wb + offsetof(BlockQ4_K, qs) + 32 * (j / 2));
        const uint4 v0 = wq[0];
        const uint4 v1 = wq[1];
        const uint32_t wv[8] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
        const uint8_t* xq = xb + offsetof(BlockQ8_K, qs) + 32 * j;
        int sub = 0;
#pragma unroll
        for (int i = 0; i < 8; ++i)
          sub = __dp4a(static_cast<int>((wv[i] >> shift) & 0x0f0f0f0fu), load_i32(xq + 4 * i), sub);
        int scale = 0;
        int min = 0;
        q4_k_scale_min(wb + offsetof(BlockQ4_K, scales), j, &scale, &min);
        const uint8_t* bs = xb + offsetof(BlockQ8_K, bsums) + 4 * j;  // bsums[2j], bsums[2j+1]
        isum = scale * sub;
        summs = min * (load_i16(bs) + load_i16(bs + 2));
      }
      isum = group_sum<kLanes>(isum);
      summs = group_sum<kLanes>(summs);
      float term = 0.0f;
      if (valid && j == 0) {
        const float xd = load_f32(xb + offsetof(BlockQ8_K, d));
        const float dall = xd * f16_bits_to_float(load_u16(wb + offsetof(BlockQ4_K, d)));
        const float dmin = xd * f16_bits_to_float(load_u16(wb + offsetof(BlockQ4_K, dmin)));
        term = dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
      }
      add_in_block_order<kLanes>(term, base, nb, lane, &acc);
    }
    return acc;
  }
  __device__ static float finish(float s) { return s; }
};

// IQ2_XXS: 8 lanes per block, lane ib32 = group of 32 values (iq2xxs_group):
// bsum = sum_ib32 (2s + 1) * sumi; term = (f16(d) * x.d) * (float)bsum; row = 0.125 * sum.
struct DotIq2Xxs {
  using Acc = float;
  static constexpr int kLanes = 8;
  __device__ static float partial(const uint8_t* w, const uint8_t* x, int nb, int lane) {
    const int ib32 = lane % kLanes;
    const auto* grid = reinterpret_cast<const unsigned long long*>(iq2::kIq2xxsGrid);
    float acc = 0.0f;
    for (int base = 0; base < nb; base += kWarpSize / kLanes) {
      const int b = base + lane / kLanes;
      const bool valid = b < nb;
      const uint8_t* wb = w + static_cast<int64_t>(b) * sizeof(BlockIQ2_XXS);
      const uint8_t* xb = x + static_cast<int64_t>(b) * sizeof(BlockQ8_K);
      int bsum = 0;
      if (valid) {
        const uint16_t* q =
            reinterpret_cast<const uint16_t*>(wb + offsetof(BlockIQ2_XXS, qs)) + 4 * ib32;
        const uint32_t a = pack2(q[0], q[1]);  // 4 codebook indices
        const uint32_t s = pack2(q[2], q[3]);  // 4 x 7 sign-index bits, 4-bit scale on top
        const uint8_t* xq = xb + offsetof(BlockQ8_K, qs) + 32 * ib32;
        int sumi = 0;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const unsigned long long g = __ldg(grid + ((a >> (8 * k)) & 255u));
          const uint32_t signs = __ldg(iq2::kIq2Signs + ((s >> (7 * k)) & 127u));
          const uint32_t g_lo = static_cast<uint32_t>(g);
          const uint32_t g_hi = static_cast<uint32_t>(g >> 32);
          sumi = __dp4a(planar::apply_signs(g_lo, signs & 15u), load_i32(xq + 8 * k), sumi);
          sumi = __dp4a(planar::apply_signs(g_hi, signs >> 4), load_i32(xq + 8 * k + 4), sumi);
        }
        bsum = (2 * static_cast<int>(s >> 28) + 1) * sumi;
      }
      bsum = group_sum<kLanes>(bsum);
      float term = 0.0f;
      if (valid && ib32 == 0) {
        const float d = f16_bits_to_float(load_u16(wb + offsetof(BlockIQ2_XXS, d))) *
                        load_f32(xb + offsetof(BlockQ8_K, d));
        term = d * static_cast<float>(bsum);
      }
      add_in_block_order<kLanes>(term, base, nb, lane, &acc);
    }
    return acc;
  }
  __device__ static float finish(float s) { return 0.125f * s; }
};

// F16 weights . float activations: exact products summed in double, rounded once to float (as
// the CPU does; the double sums' order differs, which moves a result only in double rounding).
// partial() takes values lane, lane + 32, ... Only the products matmul_f16_rows.cu cannot take
// (expert stacks, row groups, rows of other than a multiple of 8 values) come here.
struct DotF16 {
  using Acc = double;
  __device__ static double partial(const uint8_t* w, const uint8_t* x, int n, int lane) {
    const auto* wh = reinterpret_cast<const uint16_t*>(w);
    const auto* xf = reinterpret_cast<const float*>(x);
    double acc = 0.0;
#pragma unroll 8
    for (int i = lane; i < n; i += kWarpSize) {
      acc = add_product(acc, static_cast<double>(f16_bits_to_float(wh[i])),
                        static_cast<double>(xf[i]));
    }
    return acc;
  }
  __device__ static float finish(double s) { return static_cast<float>(s); }
};

// F32 weights . float activations: exact products summed in double, rounded once to float.
struct DotF32 {
  using Acc = double;
  template <int kStride = kWarpSize>
  __device__ static double partial(const uint8_t* w, const uint8_t* x, int n, int first) {
    const auto* wf = reinterpret_cast<const float*>(w);
    const auto* xf = reinterpret_cast<const float*>(x);
    double acc = 0.0;
#pragma unroll 8
    for (int i = first; i < n; i += kStride)
      acc = add_product(acc, static_cast<double>(wf[i]), static_cast<double>(xf[i]));
    return acc;
  }
  __device__ static float finish(double s) { return static_cast<float>(s); }
};

struct MatmulArgs {
  const uint8_t* w;
  int64_t row_bytes;     // one weight row
  int64_t matrix_bytes;  // one matrix of the stack (out rows)
  int n_matrices;
  int out;
  int rows_per_group;  // out / groups
  int n_blocks;        // blocks per weight row (values for F16 / F32)
  const uint8_t* enc;
  int64_t enc_row_bytes;    // stride between encoded rows
  int64_t enc_group_bytes;  // one group's share of an encoded row
  const int32_t* experts;   // nullptr: matrix 0
  const int32_t* rows;      // nullptr: slot j reads encoded row j
  int n_slots;
  float* y;
  int64_t y_stride;
  // Float products split along K (matmul_float_dmma_kernel): gridDim.z parts of k_part values,
  // part z's double sums at partials + (z * n_slots + slot) * out + row (nullptr: no split).
  double* partials;
  int k_part;
  ProductParts parts;  // matmul_float_row_kernel: several matrices in one launch (n >= 2)
};

// CTA c covers output rows [8t, 8t + 8) of slot c % n_slots, t = c / n_slots: consecutive CTAs
// read the same weight rows (L2 reuse across slots). Warp w of the CTA computes row 8t + w.
// The weight row of output o and the encoded activations it multiplies, for one slot.
struct RowOperands {
  const uint8_t* w;
  const uint8_t* x;
};
__device__ RowOperands row_operands(const MatmulArgs& a, int slot, int64_t o,
                                    const uint8_t* weights) {
  const int e = a.experts != nullptr ? a.experts[slot] : 0;
  if (e < 0 || e >= a.n_matrices) __trap();  // a routing bug: fail loudly, never read wild
  const int64_t r = a.rows != nullptr ? a.rows[slot] : slot;
  return {weights + e * a.matrix_bytes + o * a.row_bytes,
          a.enc + r * a.enc_row_bytes + (o / a.rows_per_group) * a.enc_group_bytes};
}

template <class Dot>
__global__ void __launch_bounds__(kCtaThreads) matmul_kernel(const MatmulArgs a) {
  kernel_begin();
  const int warp = static_cast<int>(threadIdx.x / kWarpSize);
  const int lane = static_cast<int>(threadIdx.x % kWarpSize);
  const int64_t tile = blockIdx.x / a.n_slots;
  const int slot = static_cast<int>(blockIdx.x - tile * a.n_slots);
  const int64_t o = tile * kWarpsPerCta + warp;
  if (o >= a.out) return;  // uniform per warp
  const RowOperands op = row_operands(a, slot, o, a.w);
  typename Dot::Acc acc = Dot::partial(op.w, op.x, a.n_blocks, lane);
#pragma unroll
  for (int off = kWarpSize / 2; off > 0; off >>= 1) acc += __shfl_xor_sync(kFullMask, acc, off);
  if (lane == 0) a.y[slot * a.y_stride + o] = Dot::finish(acc);
}

// F32 weights with few output rows (the f32 recipe's HC mixes, 24 rows of 16,384 values, and its
// router): a CTA per (output row, slot), its 256 threads splitting the row. Exact products summed
// in double, the warps' partial sums added in warp order, rounded once to float (quant/dot.h: the
// double sum's order may differ from the CPU's; its float rounding agrees but for ties).
template <class Dot>
__global__ void __launch_bounds__(kCtaThreads) matmul_float_row_kernel(const MatmulArgs a) {
  __shared__ double part[kWarpsPerCta];
  // The CTA's matrix and row: the launch's, or its part's (each test unrolled: no parameter
  // array indexed at run time).
  int64_t o = blockIdx.x;
  const uint8_t* weights = a.w;
  float* y = a.y;
#pragma unroll
  for (int p = 1; p < kMaxParts; ++p) {
    if (p < a.parts.n && static_cast<int>(blockIdx.x) >= a.parts.first[p]) {
      o = blockIdx.x - a.parts.first[p];
      weights = a.parts.w[p];
      y = a.parts.y[p];
    }
  }
  const int slot = static_cast<int>(blockIdx.y);
  // A dense product's weight row is asked of L2 before the wait (launch.cuh).
  if (a.experts == nullptr) prefetch_l2(weights + o * a.row_bytes, a.row_bytes);
  kernel_begin();
  const RowOperands op = row_operands(a, slot, o, weights);
  const double total = block_sum_double(
      Dot::template partial<kCtaThreads>(op.w, op.x, a.n_blocks, static_cast<int>(threadIdx.x)),
      part);
  if (threadIdx.x == 0) y[slot * a.y_stride + o] = static_cast<float>(total);
}

// F16 / F32 weights against many slots (prefill), one matrix, one group, on the FP64 tensor cores
// (mma.m8n8k4.f64): a CTA of 8 warps computes a tile of kRows output rows x 64 slots, warp
// (wm, wn) the rows 16 wm .. (two m8 tiles) against 64 / kWn slots (n8 tiles), kWn = 8 / (kRows /
// 16) warps across the slots. The weights and activations of 32 values at a time are widened to
// double in shared memory (the next 32 wait in registers meanwhile), each row padded to 36 doubles
// so that a fragment's 8 x 4 reads hit distinct banks. Every product is exact in double (11- or
// 24-bit by 24-bit significands), so each output is its exact products summed in double (in the
// unit's order), rounded once to float (the contract of DotF16 / DotF32: only the double sum's
// order differs). With a.partials (few output rows: too few CTAs for the SMs), CTA z of the grid's
// third dimension covers values z k_part .. of the rows and stores its double sums;
// float_parts_kernel then adds the parts in order and rounds once.
// kRows = 128: warps of 32 rows x 32 slots (4 x 4 tiles: 8 fragment loads per 16 products
// instead of 6 per 8) and 16 values per chunk (the staging registers and static shared memory of
// the taller tile stay within two CTAs per SM).
constexpr int kDmmaSlots = 64, kDmmaK = 32;
template <bool kF16, int kRows>
__global__ void __launch_bounds__(kCtaThreads, 2) matmul_float_dmma_kernel(const MatmulArgs a) {
  kernel_begin();
  static_assert(kCtaThreads == 256 && (kRows == 16 || kRows == 32 || kRows == 64 || kRows == 128),
                "8 warps; 1, 2 or 4 warps across the rows");
  constexpr int kChunk = kRows == 128 ? kDmmaK / 2 : kDmmaK;  // values per staged chunk
  constexpr int kPitch = kChunk + 4;         // doubles: a fragment's 8 x 4 reads hit distinct banks
  constexpr int kMt = kRows == 128 ? 4 : 2;  // m8 tiles per warp
  constexpr int kWm = kRows / (8 * kMt), kWn = 8 / kWm;  // warps across rows, across slots
  constexpr int kNTiles = kDmmaSlots / kWn / 8;          // n8 tiles per warp
  constexpr int kWLoads = kRows * kChunk / kCtaThreads;
  constexpr int kXLoads = kDmmaSlots * kChunk / kCtaThreads;
  constexpr int kStride = kCtaThreads / kChunk;  // staged rows per load
  __shared__ double ws[kRows][kPitch];
  __shared__ double xs[kDmmaSlots][kPitch];
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int wm = warp % kWm, wn = warp / kWm;
  const int gq = lane / 4, tq = lane % 4;
  const int64_t o0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int s0 = static_cast<int>(blockIdx.y) * kDmmaSlots;
  const int kz = a.partials != nullptr ? static_cast<int>(blockIdx.z) * a.k_part : 0;
  const int n = a.partials != nullptr ? min(a.n_blocks, kz + a.k_part) : a.n_blocks;  // values end
  // Staging: value m of this thread is tile row (or slot) srow + kStride m, value sk of the chunk,
  // so a warp reads kChunk consecutive values of each of 32 / kChunk rows.
  const int srow = tid / kChunk, sk = tid % kChunk;
  const uint8_t* wrow[kWLoads];
#pragma unroll
  for (int m = 0; m < kWLoads; ++m) {
    const int64_t o = o0 + srow + kStride * m;
    wrow[m] = o < a.out ? a.w + o * a.row_bytes : nullptr;
  }
  const float* xrow[kXLoads];
#pragma unroll
  for (int m = 0; m < kXLoads; ++m) {
    const int s = s0 + srow + kStride * m;
    const int64_t r = s < a.n_slots ? (a.rows != nullptr ? a.rows[s] : s) : -1;
    xrow[m] = r >= 0 ? reinterpret_cast<const float*>(a.enc + r * a.enc_row_bytes) : nullptr;
  }
  float wn_[kWLoads], xn[kXLoads];
  const auto fetch = [&](int k0) {
    const int k = k0 + sk;
#pragma unroll
    for (int m = 0; m < kWLoads; ++m) {
      float v = 0.0f;
      if (wrow[m] != nullptr && k < n) {
        v = kF16 ? f16_bits_to_float(load_u16(wrow[m] + 2 * k))
                 : reinterpret_cast<const float*>(wrow[m])[k];
      }
      wn_[m] = v;
    }
#pragma unroll
    for (int m = 0; m < kXLoads; ++m) xn[m] = xrow[m] != nullptr && k < n ? xrow[m][k] : 0.0f;
  };
  double acc[kMt][kNTiles][2] = {};
  fetch(kz);
  for (int k0 = kz; k0 < n; k0 += kChunk) {
#pragma unroll
    for (int m = 0; m < kWLoads; ++m) ws[srow + kStride * m][sk] = static_cast<double>(wn_[m]);
#pragma unroll
    for (int m = 0; m < kXLoads; ++m) xs[srow + kStride * m][sk] = static_cast<double>(xn[m]);
    __syncthreads();
    if (k0 + kChunk < n) fetch(k0 + kChunk);
#pragma unroll
    for (int kk = 0; kk < kChunk / 4; ++kk) {
      double av[kMt], bv[kNTiles];
#pragma unroll
      for (int i = 0; i < kMt; ++i) av[i] = ws[8 * (kMt * wm + i) + gq][4 * kk + tq];
#pragma unroll
      for (int j = 0; j < kNTiles; ++j) bv[j] = xs[8 * (kNTiles * wn + j) + gq][4 * kk + tq];
      mma_f64_tiles(acc, av, bv);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kMt; ++i) {
    const int64_t o = o0 + 8 * (kMt * wm + i) + gq;
#pragma unroll
    for (int j = 0; j < kNTiles; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int s = s0 + 8 * (kNTiles * wn + j) + 2 * tq + e;
        if (o >= a.out || s >= a.n_slots) continue;
        if (a.partials != nullptr) {
          a.partials[(int64_t{blockIdx.z} * a.n_slots + s) * a.out + o] = acc[i][j][e];
        } else {
          a.y[s * a.y_stride + o] = static_cast<float>(acc[i][j][e]);
        }
      }
    }
  }
}

// y[s, o] = the parts' double sums of matmul_float_dmma_kernel added in order, rounded once.
__global__ void float_parts_kernel(const MatmulArgs a, int parts) {
  kernel_begin();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= int64_t{a.n_slots} * a.out) return;
  const int64_t s = i / a.out, o = i % a.out;
  double sum = 0.0;
  for (int z = 0; z < parts; ++z) sum += a.partials[z * int64_t{a.n_slots} * a.out + i];
  a.y[s * a.y_stride + o] = static_cast<float>(sum);
}

template <class Dot>
void launch_dot(const MatmulArgs& a, int64_t ctas, cudaStream_t stream) {
  launch(matmul_kernel<Dot>, static_cast<unsigned>(ctas), kCtaThreads, 0, stream, a);
  DS4_CUDA_CHECK_LAUNCH();
}

// The float tiles from this many slots: on the H200 the tiled kernel prefilled Flash q2 faster
// than the warp-per-output kernel.
constexpr int64_t kTileMinSlots = 16;

// Whether a product of weights of type t in the native layout takes the float tiles: F16/F32
// weights against many slots of one matrix (prefill), in one row group.
bool uses_float_tiles(GgufType t, bool experts, int groups, int64_t n_slots) {
  return (t == GgufType::kF16 || t == GgufType::kF32) && !experts && groups == 1 &&
         n_slots >= kTileMinSlots;
}

// The float tiles' shape: the tallest tiles (fewest shared-memory reads per product) that still
// give every SM a CTA, and the K parts that bring the CTAs to
// at least two per SM while each part keeps 512 values or more.
struct FloatTiles {
  int64_t slot_tiles = 0;  // tiles of kDmmaSlots slots
  int rows = 64;
  int parts = 1;
  int k_part = 0;  // values per part, a multiple of kDmmaK
};
FloatTiles float_tiles(int64_t out, int64_t n_slots, int64_t cols) {
  constexpr int64_t kSms = 132;
  FloatTiles t;
  t.rows = 128;
  t.slot_tiles = (n_slots + kDmmaSlots - 1) / kDmmaSlots;
  while (t.rows > 16 && (out + t.rows - 1) / t.rows * t.slot_tiles < kSms) t.rows /= 2;
  const int64_t ctas = (out + t.rows - 1) / t.rows * t.slot_tiles;
  while (t.parts < 8 && ctas * t.parts < 2 * kSms && cols / (2 * t.parts) >= 512) {
    t.parts *= 2;
  }
  const int64_t chunks = (cols + kDmmaK - 1) / kDmmaK;
  t.k_part = static_cast<int>((chunks + t.parts - 1) / t.parts * kDmmaK);
  t.parts = static_cast<int>((cols + t.k_part - 1) / t.k_part);
  return t;
}

template <bool kF16>
void launch_float_dmma(MatmulArgs a, int64_t out, int64_t n_slots, void* split_scratch,
                       cudaStream_t stream) {
  const FloatTiles t = float_tiles(out, n_slots, a.n_blocks);
  DS4_CHECK(t.slot_tiles <= kMaxGridYZ);
  const int parts = split_scratch != nullptr ? t.parts : 1;
  a.partials = parts > 1 ? static_cast<double*>(split_scratch) : nullptr;
  a.k_part = t.k_part;
  const dim3 grid(static_cast<unsigned>((out + t.rows - 1) / t.rows),
                  static_cast<unsigned>(t.slot_tiles), static_cast<unsigned>(parts));
  if (t.rows == 128) {
    launch(matmul_float_dmma_kernel<kF16, 128>, grid, kCtaThreads, 0, stream, a);
  } else if (t.rows == 64) {
    launch(matmul_float_dmma_kernel<kF16, 64>, grid, kCtaThreads, 0, stream, a);
  } else if (t.rows == 32) {
    launch(matmul_float_dmma_kernel<kF16, 32>, grid, kCtaThreads, 0, stream, a);
  } else {
    launch(matmul_float_dmma_kernel<kF16, 16>, grid, kCtaThreads, 0, stream, a);
  }
  DS4_CUDA_CHECK_LAUNCH();
  if (parts > 1) {
    const int64_t n = out * n_slots;
    launch(float_parts_kernel, static_cast<unsigned>((n + 255) / 256), 256, 0, stream, a, parts);
    DS4_CUDA_CHECK_LAUNCH();
  }
}

int64_t ctas_for_warps(int64_t warps) {
  const int64_t ctas = (warps + kWarpsPerCta - 1) / kWarpsPerCta;
  DS4_CHECK_MSG(ctas <= INT_MAX, "matmul_q: grid of %lld CTAs too large",
                static_cast<long long>(ctas));
  return ctas;
}

}  // namespace

int64_t matmul_split_bytes(const Weight& w, int64_t n_slots, int groups, bool experts) {
  if (w.layout != 0 || !uses_float_tiles(w.type, experts, groups, n_slots)) return 0;
  const FloatTiles t = float_tiles(w.ne[1], n_slots, w.ne[0]);
  return t.parts > 1 ? int64_t{t.parts} * n_slots * w.ne[1] * static_cast<int64_t>(sizeof(double))
                     : 0;
}

namespace {

// launch_matmul's checks of a product (true: there is something to launch).
bool check_matmul(const Weight& w, const void* enc, int64_t enc_row_bytes, int64_t n_slots,
                  int groups, const float* y, int64_t y_stride) {
  const int64_t cols = w.ne[0];
  const int64_t out = w.ne[1];
  const int64_t n_mat = w.ne[2];
  DS4_CHECK_MSG(cols > 0 && out > 0 && n_mat > 0 && out <= INT_MAX && n_mat <= INT_MAX,
                "matmul: ne = {%lld, %lld, %lld}", static_cast<long long>(cols),
                static_cast<long long>(out), static_cast<long long>(n_mat));
  DS4_CHECK_MSG(groups >= 1 && out % groups == 0, "matmul: %lld rows in %d groups",
                static_cast<long long>(out), groups);
  DS4_CHECK_MSG(n_slots >= 0 && n_slots <= INT_MAX, "matmul: n_slots=%lld",
                static_cast<long long>(n_slots));
  const int64_t group_bytes = encoded_row_bytes(w.type, cols);  // checks type and cols
  if (n_slots == 0) return false;
  DS4_CHECK_MSG(enc_row_bytes >= groups * group_bytes && enc_row_bytes % 4 == 0,
                "matmul: encoded rows of %lld bytes, %d groups of %lld needed",
                static_cast<long long>(enc_row_bytes), groups, static_cast<long long>(group_bytes));
  DS4_CHECK_MSG(n_slots == 1 || y_stride >= out, "matmul: y_stride=%lld < out=%lld",
                static_cast<long long>(y_stride), static_cast<long long>(out));
  DS4_CHECK_MSG(w.data != nullptr && aligned_to(w.data, kWeightAlign),
                "matmul: weight data null or not %lld-byte aligned",
                static_cast<long long>(kWeightAlign));
  DS4_CHECK_MSG(enc != nullptr && aligned_to(enc, 4) && y != nullptr && aligned_to(y, 4),
                "matmul: null or misaligned buffer");
  return true;
}

// The block-layout kernels' arguments for a checked product.
MatmulArgs matmul_args(const Weight& w, const void* enc, int64_t enc_row_bytes,
                       const int32_t* experts, const int32_t* rows, int64_t n_slots, int groups,
                       float* y, int64_t y_stride) {
  const int64_t cols = w.ne[0];
  const int64_t out = w.ne[1];
  const gguf::TypeInfo info = *gguf::type_info(static_cast<uint32_t>(w.type));
  const int64_t n_blocks = cols / info.block_elems;
  DS4_CHECK(n_blocks <= INT_MAX);
  MatmulArgs a{};
  a.w = static_cast<const uint8_t*>(w.data);
  a.row_bytes = n_blocks * info.block_bytes;
  a.matrix_bytes = a.row_bytes * out;
  a.n_matrices = static_cast<int>(w.ne[2]);
  a.out = static_cast<int>(out);
  a.rows_per_group = static_cast<int>(out / groups);
  a.n_blocks = static_cast<int>(n_blocks);
  a.enc = static_cast<const uint8_t*>(enc);
  a.enc_row_bytes = enc_row_bytes;
  a.enc_group_bytes = encoded_row_bytes(w.type, cols);
  a.experts = experts;
  a.rows = rows;
  a.n_slots = static_cast<int>(n_slots);
  a.y = y;
  a.y_stride = y_stride;
  return a;
}

// F32 rows that take a CTA each (few output rows of a long row). F16 rows take
// matmul_f16_rows.cu's kernel. Below kTileMinSlots slots the choice ignores the slot count, so
// that a slot gets the same bits in a launch of a few slots (a speculative verification) as alone.
bool float_rows_per_cta(const Weight& w, int64_t n_slots) {
  const int64_t ctas = n_slots < kTileMinSlots ? w.ne[1] : w.ne[1] * n_slots;
  return w.type == GgufType::kF32 && ctas < 2048 && w.ne[0] >= 1024;
}

void launch_float_rows(const MatmulArgs& a, int64_t out, int64_t n_slots, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(out), static_cast<unsigned>(n_slots));
  launch(matmul_float_row_kernel<DotF32>, grid, kCtaThreads, 0, stream, a);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool launch_matmul_parts(std::span<const Weight* const> w, std::span<float* const> y,
                         const void* enc, int64_t enc_row_bytes, const int32_t* experts,
                         const int32_t* rows, int64_t n_slots, int64_t y_stride,
                         cudaStream_t stream) {
  const size_t n = w.size();
  if (n < 2 || n > static_cast<size_t>(kMaxParts) || y.size() != n) return false;
  const Weight& w0 = *w[0];
  for (size_t p = 0; p < n; ++p) {
    if (!check_matmul(*w[p], enc, enc_row_bytes, n_slots, 1, y[p], y_stride)) return false;
  }
  if (w0.layout == kLayoutPlanar) {
    return launch_matmul_planar_parts(w, y, enc, enc_row_bytes, experts, rows, n_slots, y_stride,
                                      stream);
  }
  // F16 products of one matrix: the F16 rows kernel, as launch_matmul runs them.
  if (const auto p =
          f16_rows_product(w, y, enc, enc_row_bytes, experts, rows, n_slots, 1, y_stride);
      p && !uses_float_tiles(w0.type, false, 1, n_slots)) {
    launch_f16_rows(*p, stream);
    return true;
  }
  // F32 weights of few rows, one slot: the CTA-per-row kernel, as launch_matmul runs them.
  if (w0.layout != 0 || experts != nullptr || n_slots != 1) return false;
  int64_t total = 0;
  for (const Weight* wp : w) {
    if (wp->layout != 0 || wp->type != w0.type || wp->ne[0] != w0.ne[0] || wp->ne[2] != 1 ||
        !float_rows_per_cta(*wp, n_slots) || uses_float_tiles(wp->type, false, 1, n_slots))
      return false;
    total += wp->ne[1];
  }
  MatmulArgs a = matmul_args(w0, enc, enc_row_bytes, nullptr, rows, n_slots, 1, y[0], y_stride);
  a.rows_per_group = 1 << 30;  // one output group per part, whatever its rows
  a.parts.n = static_cast<int>(n);
  int64_t first = 0;
  for (size_t p = 0; p < n; ++p) {
    a.parts.first[p] = static_cast<int>(first);
    a.parts.w[p] = static_cast<const uint8_t*>(w[p]->data);
    a.parts.y[p] = y[p];
    a.parts.out[p] = static_cast<int>(w[p]->ne[1]);
    first += w[p]->ne[1];
  }
  a.parts.first[n] = static_cast<int>(first);
  launch_float_rows(a, total, n_slots, stream);
  return true;
}

void launch_matmul(const Weight& w, const void* enc, int64_t enc_row_bytes, const int32_t* experts,
                   const int32_t* rows, int64_t n_slots, int groups, float* y, int64_t y_stride,
                   cudaStream_t stream, const SlotGroups* by_expert, PlanarPath path,
                   void* split_scratch) {
  if (!check_matmul(w, enc, enc_row_bytes, n_slots, groups, y, y_stride)) return;
  if (w.layout == kLayoutPlanar) {
    launch_matmul_planar(w, enc, enc_row_bytes, experts, rows, n_slots, groups, y, y_stride, stream,
                         by_expert, path);
    return;
  }
  DS4_CHECK_MSG(w.layout == 0, "matmul: unknown weight layout %d", w.layout);
  const int64_t out = w.ne[1];
  MatmulArgs a = matmul_args(w, enc, enc_row_bytes, experts, rows, n_slots, groups, y, y_stride);
  const int64_t ctas =
      ctas_for_warps(((out + kWarpsPerCta - 1) / kWarpsPerCta) * kWarpsPerCta * n_slots);

  // Float weights against many slots of one matrix (prefill): FP64 tensor-core tiles, of fewer
  // rows when 128-row tiles would leave SMs idle.
  if (uses_float_tiles(w.type, experts != nullptr, groups, n_slots)) {
    w.type == GgufType::kF16 ? launch_float_dmma<true>(a, out, n_slots, split_scratch, stream)
                             : launch_float_dmma<false>(a, out, n_slots, split_scratch, stream);
    return;
  }
  // F16 weights against fewer slots (decode): the F16 rows kernel (float sums), where it fits.
  const Weight* const ws[] = {&w};
  float* const ys[] = {y};
  if (const auto p =
          f16_rows_product(ws, ys, enc, enc_row_bytes, experts, rows, n_slots, groups, y_stride)) {
    launch_f16_rows(*p, stream);
    return;
  }
  // Few output rows of a long F32 row: a CTA per row instead of a warp (fills the GPU).
  if (float_rows_per_cta(w, n_slots)) {
    launch_float_rows(a, out, n_slots, stream);
    return;
  }
  switch (w.type) {
    case GgufType::kF32: launch_dot<DotF32>(a, ctas, stream); break;
    case GgufType::kF16: launch_dot<DotF16>(a, ctas, stream); break;
    case GgufType::kQ8_0: launch_dot<DotQ8_0>(a, ctas, stream); break;
    case GgufType::kQ2_K: launch_dot<DotQ2K>(a, ctas, stream); break;
    case GgufType::kQ4_K: launch_dot<DotQ4K>(a, ctas, stream); break;
    case GgufType::kIQ2_XXS: launch_dot<DotIq2Xxs>(a, ctas, stream); break;
    default:
      DS4_CHECK_MSG(false, "matmul: unsupported weight type %.*s",
                    static_cast<int>(gguf::to_string(w.type).size()),
                    gguf::to_string(w.type).data());
  }
}

}  // namespace ds4::backend::cuda
