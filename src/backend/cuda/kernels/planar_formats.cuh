// src/backend/cuda/kernels/planar_formats.cuh: the per-format pieces of the planar matrix kernel
// (matmul_planar.cu) as host+device code: how a block is split into its planes (split_block), read
// back (load) and dotted with one activation block (term), exactly as quant/dot_ref.cpp forms a
// block's float term (from_sums: the float part from the exact integer sums, shared with the
// tensor-core kernel, matmul_imma.cu); finish() maps a row's folded sum. Host builds replace the
// device intrinsics (dp4a, f16 decode) with exact equivalents, so planar_formats_test checks these
// functions bit for bit against the CPU reference without a GPU.
#pragma once

#include <cuda_fp16.h>
#include <vector_types.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "base/f16.h"
#include "gguf/types.h"
#include "quant/blocks.h"

#if defined(__CUDACC__)
#define DS4_PF_HD __host__ __device__
#define DS4_PF_UNROLL _Pragma("unroll")
#else
#define DS4_PF_HD
#define DS4_PF_UNROLL
#endif

namespace ds4::backend::cuda::planar {

using quant::ActQ8_0;
using quant::BlockIQ2_XXS;
using quant::BlockQ2_K;
using quant::BlockQ4_K;
using quant::BlockQ8_0;
using quant::BlockQ8_K;

DS4_PF_HD inline float f16_bits(uint16_t h) {  // exact, subnormals included
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h));
#else
  return f16_to_f32(h);
#endif
}
// Signed 4 x int8 dot product plus c (the device's dp4a).
DS4_PF_HD inline int dp4a(int a, int b, int c) {
#if defined(__CUDA_ARCH__)
  return __dp4a(a, b, c);
#else
  for (int i = 0; i < 4; ++i)
    c += static_cast<int8_t>(static_cast<uint32_t>(a) >> (8 * i)) *
         static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * i));
  return c;
#endif
}
// The IQ2_XXS codebook and sign table, wherever they live (device or host copies).
struct Iq2Lookup {
  const uint64_t* grid;
  const uint8_t* signs;
};
DS4_PF_HD inline float x_scale(const uint8_t* x) {
  return *reinterpret_cast<const float*>(x);  // ActQ8_0::d and BlockQ8_K::d are both at 0
}
DS4_PF_HD inline int x_word(const uint8_t* x, int i) {
  return reinterpret_cast<const int*>(x + 4)[i];  // qs at offset 4 in both activation blocks
}

// dst[4i .. 4i + 3] = the four words of 16-byte chunk i at p (16-byte aligned), i < kChunks.
template <int kChunks>
DS4_PF_HD inline void load_words(const uint8_t* p, uint32_t* dst) {
  const uint4* v = reinterpret_cast<const uint4*>(p);
  DS4_PF_UNROLL
  for (int i = 0; i < kChunks; ++i) {
    const uint4 t = v[i];
    dst[4 * i] = t.x, dst[4 * i + 1] = t.y, dst[4 * i + 2] = t.z, dst[4 * i + 3] = t.w;
  }
}

// ---- per-format block terms: load() reads one weight block, term() dots it with one
// activation block exactly as dot_ref.cpp does; add_term() folds it into a row's running sum;
// finish() maps the folded sum ----

// A Q8_0 block's term keeps its two factors: the reference folds the last product and the add
// into one fused multiply-add (acc = fma(scale, (float)isum, acc)). The other formats' terms are
// one rounded float, added.
struct FmaTerm {
  float scale, value;
};
DS4_PF_HD inline float add_term(float acc, float t) { return acc + t; }
DS4_PF_HD inline float add_term(float acc, FmaTerm t) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(t.scale, t.value, acc);
#else
  return std::fma(t.scale, t.value, acc);
#endif
}
#if defined(__CUDACC__)
// The term of lane src (within groups of width lanes), for folds that gather terms by shuffles.
__device__ inline float shfl_term(float t, int src, int width) {
  return __shfl_sync(0xffffffffu, t, src, width);
}
__device__ inline FmaTerm shfl_term(FmaTerm t, int src, int width) {
  return {__shfl_sync(0xffffffffu, t.scale, src, width),
          __shfl_sync(0xffffffffu, t.value, src, width)};
}
#endif

// Q8_0: body = qs (32), aux = d. term = {f16(d) * x.d, (float)isum}, folded by one fma.
struct FmtQ8_0 {
  using Term = FmaTerm;
  static constexpr int kBody = 32, kAux = 2, kXBytes = sizeof(ActQ8_0);
  struct W {
    uint4 q0, q1;
    float d;
  };
  DS4_PF_HD static W load(const uint8_t* body, const uint8_t* aux) {
    const uint4* q = reinterpret_cast<const uint4*>(body);
    return {q[0], q[1], f16_bits(*reinterpret_cast<const uint16_t*>(aux))};
  }
  DS4_PF_HD static Term term(const W& w, const uint8_t* x, const Iq2Lookup&) {
    int s = 0;
    s = dp4a(static_cast<int>(w.q0.x), x_word(x, 0), s);
    s = dp4a(static_cast<int>(w.q0.y), x_word(x, 1), s);
    s = dp4a(static_cast<int>(w.q0.z), x_word(x, 2), s);
    s = dp4a(static_cast<int>(w.q0.w), x_word(x, 3), s);
    s = dp4a(static_cast<int>(w.q1.x), x_word(x, 4), s);
    s = dp4a(static_cast<int>(w.q1.y), x_word(x, 5), s);
    s = dp4a(static_cast<int>(w.q1.z), x_word(x, 6), s);
    s = dp4a(static_cast<int>(w.q1.w), x_word(x, 7), s);
    return from_sums(w.d, x_scale(x), s);
  }
  // The block term from the weight scale, the activation scale and the integer block dot.
  DS4_PF_HD static Term from_sums(float wd, float xd, int isum) {
    return {wd * xd, static_cast<float>(isum)};
  }
  DS4_PF_HD static float finish(float s) { return s; }
};

// Q2_K: body = scales (16) + qs (64), aux = d, dmin. Sub-block s (16 values) lives in qs bytes
// 32 * (s / 8) + 16 * (s % 2) + i at shift 2 * ((s % 8) / 2) (quant::q2_k_position).
// term = (x.d * f16(d)) * (float)isum - (x.d * f16(dmin)) * (float)summs.
struct FmtQ2K {
  using Term = float;
  static constexpr int kBody = 80, kAux = 4, kXBytes = sizeof(BlockQ8_K);
  struct W {
    uint32_t sc[4];
    uint32_t q[16];
    uint16_t d, dmin;
  };
  DS4_PF_HD static W load(const uint8_t* body, const uint8_t* aux) {
    W w;
    load_words<1>(body, w.sc);
    load_words<4>(body + 16, w.q);
    const uint16_t* a = reinterpret_cast<const uint16_t*>(aux);
    w.d = a[0], w.dmin = a[1];
    return w;
  }
  DS4_PF_HD static float term(const W& w, const uint8_t* x, const Iq2Lookup&) {
    const int16_t* bsums = reinterpret_cast<const int16_t*>(x + offsetof(BlockQ8_K, bsums));
    int isum = 0, summs = 0;
    DS4_PF_UNROLL
    for (int s = 0; s < 16; ++s) {
      const int sc = static_cast<int>((w.sc[s / 4] >> (8 * (s % 4))) & 0xffu);
      const int shift = 2 * ((s % 8) / 2);
      const int word0 = 8 * (s / 8) + 4 * (s % 2);  // qs byte 32 * (s / 8) + 16 * (s % 2)
      int sub = 0;
      DS4_PF_UNROLL
      for (int i = 0; i < 4; ++i) {
        sub = dp4a(static_cast<int>((w.q[word0 + i] >> shift) & 0x03030303u), x_word(x, 4 * s + i),
                   sub);
      }
      isum += (sc & 15) * sub;
      summs += static_cast<int>(bsums[s]) * (sc >> 4);
    }
    return from_sums(x_scale(x), f16_bits(w.d), f16_bits(w.dmin), isum, summs);
  }
  // The block term from the activation scale, the weight's d and dmin (decoded) and the integer
  // sums (isum = sum of scale * sub-block dot, summs = sum of min * bsum).
  DS4_PF_HD static float from_sums(float xd, float d, float dmin, int isum, int summs) {
    const float dall = xd * d;
    const float dm = xd * dmin;
    return dall * static_cast<float>(isum) - dm * static_cast<float>(summs);
  }
  DS4_PF_HD static float finish(float s) { return s; }
};

// Q4_K: body = the whole 144-byte block. Sub-block j (32 values) is qs[(j / 2) * 32 + l], low
// nibble for even j; 6-bit scale and min per sub-block (quant::q4_k_scale_min).
struct FmtQ4K {
  using Term = float;
  static constexpr int kBody = 144, kAux = 0, kXBytes = sizeof(BlockQ8_K);
  struct W {
    uint32_t h[4];  // d, dmin, scales
    uint32_t q[32];
  };
  DS4_PF_HD static W load(const uint8_t* body, const uint8_t*) {
    W w;
    load_words<1>(body, w.h);
    load_words<8>(body + 16, w.q);
    return w;
  }
  DS4_PF_HD static int byte_of(const W& w, int i) {  // byte i of the block's first 16 bytes
    return static_cast<int>((w.h[i / 4] >> (8 * (i % 4))) & 0xffu);
  }
  DS4_PF_HD static float term(const W& w, const uint8_t* x, const Iq2Lookup&) {
    const int16_t* bsums = reinterpret_cast<const int16_t*>(x + offsetof(BlockQ8_K, bsums));
    int isum = 0, summs = 0;
    DS4_PF_UNROLL
    for (int j = 0; j < 8; ++j) {
      // scales start at block byte 4
      int scale, min;
      if (j < 4) {
        scale = byte_of(w, 4 + j) & 63;
        min = byte_of(w, 4 + j + 4) & 63;
      } else {
        scale = (byte_of(w, 4 + j + 4) & 0x0f) | ((byte_of(w, 4 + j - 4) >> 6) << 4);
        min = (byte_of(w, 4 + j + 4) >> 4) | ((byte_of(w, 4 + j) >> 6) << 4);
      }
      const int shift = 4 * (j & 1);
      int sub = 0;
      DS4_PF_UNROLL
      for (int i = 0; i < 8; ++i) {
        sub = dp4a(static_cast<int>((w.q[8 * (j / 2) + i] >> shift) & 0x0f0f0f0fu),
                   x_word(x, 8 * j + i), sub);
      }
      isum += scale * sub;
      summs += min * (static_cast<int>(bsums[2 * j]) + static_cast<int>(bsums[2 * j + 1]));
    }
    const float xd = x_scale(x);
    const float dall = xd * f16_bits(static_cast<uint16_t>(w.h[0] & 0xffffu));
    const float dmin = xd * f16_bits(static_cast<uint16_t>(w.h[0] >> 16));
    return dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
  }
  DS4_PF_HD static float finish(float s) { return s; }
};

// Four codebook magnitudes (bytes < 128) with the signs of 4 bits applied (a set bit negates
// its byte): per byte (g ^ 0xff) + 1 = -g without carries.
DS4_PF_HD inline int apply_signs(uint32_t mag, uint32_t bits4) {
  const uint32_t m = ((bits4 * 0x00204081u) & 0x01010101u) * 0xffu;
  return static_cast<int>((mag ^ m) + (m & 0x01010101u));
}

// IQ2_XXS: body = qs (64), aux = d. Group ib32 (32 values) = words 2 ib32 (four grid indices) and
// 2 ib32 + 1 (four 7-bit sign indices, 4-bit scale on top); bsum = sum (2s + 1) * sumi;
// term = (f16(d) * x.d) * (float)bsum; the row is 0.125 * the folded sum.
struct FmtIq2Xxs {
  using Term = float;
  static constexpr int kBody = 64, kAux = 2, kXBytes = sizeof(BlockQ8_K);
  struct W {
    uint32_t q[16];
    float d;
  };
  DS4_PF_HD static W load(const uint8_t* body, const uint8_t* aux) {
    W w;
    load_words<4>(body, w.q);
    w.d = f16_bits(*reinterpret_cast<const uint16_t*>(aux));
    return w;
  }
  DS4_PF_HD static float term(const W& w, const uint8_t* x, const Iq2Lookup& t) {
    int bsum = 0;
    DS4_PF_UNROLL
    for (int g = 0; g < 8; ++g) {
      const uint32_t a = w.q[2 * g];
      const uint32_t s = w.q[2 * g + 1];
      int sumi = 0;
      DS4_PF_UNROLL
      for (int k = 0; k < 4; ++k) {
        const uint64_t v = t.grid[(a >> (8 * k)) & 255u];
        const uint32_t signs = t.signs[(s >> (7 * k)) & 127u];
        sumi = dp4a(apply_signs(static_cast<uint32_t>(v), signs & 15u), x_word(x, 8 * g + 2 * k),
                    sumi);
        sumi = dp4a(apply_signs(static_cast<uint32_t>(v >> 32), signs >> 4),
                    x_word(x, 8 * g + 2 * k + 1), sumi);
      }
      bsum += (2 * static_cast<int>(s >> 28) + 1) * sumi;
    }
    return from_sums(w.d, x_scale(x), bsum);
  }
  // The block term from the weight scale, the activation scale and bsum.
  DS4_PF_HD static float from_sums(float wd, float xd, int bsum) {
    const float d = wd * xd;
    return d * static_cast<float>(bsum);
  }
  DS4_PF_HD static float finish(float s) { return 0.125f * s; }
};

template <class F>
DS4_PF_HD inline void split_block(const uint8_t* src, uint8_t* body, uint8_t* aux, int body_off,
                                  int aux_off, int aux2_off) {
  for (int i = 0; i < F::kBody; ++i) body[i] = src[body_off + i];
  if (F::kAux >= 2) aux[0] = src[aux_off], aux[1] = src[aux_off + 1];
  if (F::kAux == 4) aux[2] = src[aux2_off], aux[3] = src[aux2_off + 1];
}

// Block b of a tensor of n_blocks blocks of type t (src points at that block, in the GGUF layout)
// into its places in the planes at dst. False for a type without a planar layout.
DS4_PF_HD inline bool pack_block(gguf::GgufType t, const uint8_t* src, int64_t b, int64_t n_blocks,
                                 uint8_t* dst) {
  switch (t) {
    case gguf::GgufType::kQ8_0:
      split_block<FmtQ8_0>(src, dst + b * FmtQ8_0::kBody,
                           dst + n_blocks * FmtQ8_0::kBody + b * FmtQ8_0::kAux,
                           offsetof(BlockQ8_0, qs), offsetof(BlockQ8_0, d), 0);
      return true;
    case gguf::GgufType::kQ2_K:
      split_block<FmtQ2K>(
          src, dst + b * FmtQ2K::kBody, dst + n_blocks * FmtQ2K::kBody + b * FmtQ2K::kAux,
          offsetof(BlockQ2_K, scales), offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin));
      return true;
    case gguf::GgufType::kQ4_K:
      split_block<FmtQ4K>(src, dst + b * FmtQ4K::kBody, nullptr, 0, 0, 0);
      return true;
    case gguf::GgufType::kIQ2_XXS:
      split_block<FmtIq2Xxs>(src, dst + b * FmtIq2Xxs::kBody,
                             dst + n_blocks * FmtIq2Xxs::kBody + b * FmtIq2Xxs::kAux,
                             offsetof(BlockIQ2_XXS, qs), offsetof(BlockIQ2_XXS, d), 0);
      return true;
    default: return false;
  }
}

static_assert(offsetof(BlockQ2_K, qs) == offsetof(BlockQ2_K, scales) + 16,
              "Q2_K body = scales then qs, contiguous");

}  // namespace ds4::backend::cuda::planar
