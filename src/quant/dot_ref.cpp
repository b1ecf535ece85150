// src/quant/dot_ref.cpp: the scalar dot products that define CPU matmul results (model.md §3.3).
// Owns: the reference arithmetic and its order: exact integer sums inside a block, then one float
//   term per block added to the accumulator in block order, starting from 0 (Q8_0: the term's
//   last product and the add are one fused multiply-add, see dot_q8_0_ref).
// Does not own: fast variants (x86/), kernel selection and matvec (dot_select.cpp).
//
// The module is compiled with -ffp-contract=off, so `acc += a * b` is a rounded product followed
// by a rounded add, never a fused multiply-add, unless written as std::fma; the fast kernels
// reproduce exactly that.
#include <cmath>
#include <cstdint>

#include "base/f16.h"
#include "quant/dot.h"
#include "quant/iq2_tables.h"

namespace ds4::quant {

// acc = fma(f16(w.d) * x.d, (float)isum, acc), isum = sum of 32 int8 products. model.md 3.3 writes
// a product and an add; the fused form (ds4's NEON path accumulates Q8_0 with FMAs too) is one
// instruction fewer per output and block for the CUDA tensor-core kernel, whose float work per
// block bounds it, and keeps both backends on one arithmetic (docs/engine.md).
float dot_q8_0_ref(const BlockQ8_0* w, const ActQ8_0* x, int64_t n_blocks) {
  float acc = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    int32_t isum = 0;
    for (int i = 0; i < kQ8_0BlockElems; ++i) isum += int32_t{w[b].qs[i]} * int32_t{x[b].qs[i]};
    const float scale = f16_to_f32(w[b].d) * x[b].d;
    acc = std::fma(scale, static_cast<float>(isum), acc);
  }
  return acc;
}

// sum += (y.d * f16(d)) * isum - (y.d * f16(dmin)) * summs, with
//   isum  = sum_s (scales[s] & 15) * sum_{16 values of s} q8 * q2,
//   summs = sum_s bsums[s] * (scales[s] >> 4).
float dot_q2_k_ref(const BlockQ2_K* w, const BlockQ8_K* x, int64_t n_blocks) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const BlockQ2_K& wb = w[b];
    const BlockQ8_K& xb = x[b];
    int32_t summs = 0;
    for (int s = 0; s < 16; ++s) summs += int32_t{xb.bsums[s]} * (wb.scales[s] >> 4);
    int32_t isum = 0;
    for (int s = 0; s < 16; ++s) {
      int32_t sub = 0;
      for (int i = 0; i < 16; ++i) {
        const int e = 16 * s + i;
        const Q2KPosition p = q2_k_position(e);
        sub += int32_t{xb.qs[e]} * ((wb.qs[p.byte] >> p.shift) & 3);
      }
      isum += (wb.scales[s] & 15) * sub;
    }
    const float dall = xb.d * f16_to_f32(wb.d);
    const float dmin = xb.d * f16_to_f32(wb.dmin);
    sum += dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
  }
  return sum;
}

// sum += (y.d * f16(d)) * isum - (y.d * f16(dmin)) * summs, with
//   isum  = sum_j sc_j * sum_{32 values of j} q8 * q4,
//   summs = sum_j m_j * (bsums[2j] + bsums[2j+1]).
float dot_q4_k_ref(const BlockQ4_K* w, const BlockQ8_K* x, int64_t n_blocks) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const BlockQ4_K& wb = w[b];
    const BlockQ8_K& xb = x[b];
    int32_t isum = 0;
    int32_t summs = 0;
    for (int j = 0; j < 8; ++j) {
      const ScaleMin sm = q4_k_scale_min(wb.scales, j);
      int32_t sub = 0;
      for (int l = 0; l < 32; ++l) {
        const int e = 32 * j + l;
        const Q4KPosition p = q4_k_position(e);
        const int q = p.high ? (wb.qs[p.byte] >> 4) : (wb.qs[p.byte] & 15);
        sub += int32_t{xb.qs[e]} * q;
      }
      isum += sm.scale * sub;
      summs += sm.min * (int32_t{xb.bsums[2 * j]} + int32_t{xb.bsums[2 * j + 1]});
    }
    const float dall = xb.d * f16_to_f32(wb.d);
    const float dmin = xb.d * f16_to_f32(wb.dmin);
    sum += dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
  }
  return sum;
}

// sumf += (f16(d) * y.d) * bsum, bsum = sum_ib32 (2s+1) * sum_{32 values} +-g * q8;
// the result is 0.125 * sumf.
float dot_iq2_xxs_ref(const BlockIQ2_XXS* w, const BlockQ8_K* x, int64_t n_blocks) {
  float sumf = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const BlockQ8_K& xb = x[b];
    int32_t bsum = 0;
    for (int ib32 = 0; ib32 < 8; ++ib32) {
      const Iq2xxsGroup g = iq2xxs_group(w[b], ib32);
      int32_t sumi = 0;
      for (int k = 0; k < 4; ++k) {
        const uint8_t signs = kIq2Signs[g.signs[k]];
        for (int j = 0; j < 8; ++j) {
          const int32_t v = int32_t{iq2xxs_grid_byte(g.grid[k], j)} * xb.qs[ib32 * 32 + k * 8 + j];
          sumi += ((signs >> j) & 1) ? -v : v;
        }
      }
      bsum += (2 * g.scale + 1) * sumi;
    }
    const float d = f16_to_f32(w[b].d) * xb.d;
    sumf += d * static_cast<float>(bsum);
  }
  return 0.125f * sumf;
}

// acc += (double)f16(w[i]) * (double)x[i] in index order (exact products), rounded once.
float dot_f16_ref(const uint16_t* w, const float* x, int64_t n) {
  double acc = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    acc += static_cast<double>(f16_to_f32(w[i])) * static_cast<double>(x[i]);
  }
  return static_cast<float>(acc);
}

// acc += (double)w[i] * (double)x[i] in index order, then rounded once to float.
float dot_f32_ref(const float* w, const float* x, int64_t n) {
  double acc = 0.0;
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(w[i]) * static_cast<double>(x[i]);
  return static_cast<float>(acc);
}

const DotKernels& reference_dot_kernels() {
  static const DotKernels kReference{
      .name = "reference",
      .q8_0 = dot_q8_0_ref,
      .q2_k = dot_q2_k_ref,
      .q4_k = dot_q4_k_ref,
      .iq2_xxs = dot_iq2_xxs_ref,
      .q2_k_rows = rows_one_by_one<BlockQ2_K, dot_q2_k_ref>,
      .q4_k_rows = rows_one_by_one<BlockQ4_K, dot_q4_k_ref>,
      .iq2_xxs_rows = rows_one_by_one<BlockIQ2_XXS, dot_iq2_xxs_ref>,
      .f16 = dot_f16_ref,
      .f32 = dot_f32_ref,
  };
  return kReference;
}

}  // namespace ds4::quant
