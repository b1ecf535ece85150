// src/quant/dequantize.cpp: scalar block decoders (model.md §3.2).
// Owns: the reference decode arithmetic, including its float evaluation order.
// Does not own: layouts and bit addressing (blocks.h, iq2_tables.h).
//
// Evaluation order is part of the definition: products are formed exactly as written in the
// comments (e.g. Q2_K: (d * scale) * q - dmin * min), with no fused multiply-add (the module is
// built with -ffp-contract=off), so a kernel that decodes the same way matches bit for bit.
#include "quant/dequantize.h"

#include <cstring>
#include <string>

#include "base/check.h"
#include "base/f16.h"
#include "quant/iq2_tables.h"

namespace ds4::quant {
namespace {

int64_t whole_blocks(int64_t n, int64_t block) {
  DS4_CHECK_MSG(n >= 0 && n % block == 0, "n=%lld is not a multiple of %lld",
                static_cast<long long>(n), static_cast<long long>(block));
  return n / block;
}

}  // namespace

void dequantize_row_f16(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

void dequantize_row_bf16(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}

// x[i] = f16(d) * qs[i]
void dequantize_row_q8_0(const BlockQ8_0* src, float* dst, int64_t n) {
  const int64_t nb = whole_blocks(n, kQ8_0BlockElems);
  for (int64_t b = 0; b < nb; ++b) {
    const float d = f16_to_f32(src[b].d);
    for (int i = 0; i < kQ8_0BlockElems; ++i) dst[b * kQ8_0BlockElems + i] = d * src[b].qs[i];
  }
}

// x[i] = d * qs[i], d float32
void dequantize_row_q8_k(const BlockQ8_K* src, float* dst, int64_t n) {
  const int64_t nb = whole_blocks(n, kSuperBlockElems);
  for (int64_t b = 0; b < nb; ++b) {
    for (int i = 0; i < kSuperBlockElems; ++i)
      dst[b * kSuperBlockElems + i] = src[b].d * src[b].qs[i];
  }
}

// x = (f16(d) * (scales[s] & 15)) * q - f16(dmin) * (scales[s] >> 4)
void dequantize_row_q2_k(const BlockQ2_K* src, float* dst, int64_t n) {
  const int64_t nb = whole_blocks(n, kSuperBlockElems);
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ2_K& blk = src[b];
    const float d = f16_to_f32(blk.d);
    const float dmin = f16_to_f32(blk.dmin);
    for (int e = 0; e < kSuperBlockElems; ++e) {
      const Q2KPosition p = q2_k_position(e);
      const int q = (blk.qs[p.byte] >> p.shift) & 3;
      const uint8_t sc = blk.scales[p.sub_block];
      const float dl = d * static_cast<float>(sc & 15);
      const float ml = dmin * static_cast<float>(sc >> 4);
      dst[b * kSuperBlockElems + e] = dl * static_cast<float>(q) - ml;
    }
  }
}

// x = (f16(d) * sc) * q - f16(dmin) * m, with 6-bit sc, m per sub-block of 32
void dequantize_row_q4_k(const BlockQ4_K* src, float* dst, int64_t n) {
  const int64_t nb = whole_blocks(n, kSuperBlockElems);
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ4_K& blk = src[b];
    const float d = f16_to_f32(blk.d);
    const float dmin = f16_to_f32(blk.dmin);
    for (int e = 0; e < kSuperBlockElems; ++e) {
      const Q4KPosition p = q4_k_position(e);
      const uint8_t byte = blk.qs[p.byte];
      const int q = p.high ? (byte >> 4) : (byte & 15);
      const ScaleMin sm = q4_k_scale_min(blk.scales, p.sub_block);
      const float dl = d * static_cast<float>(sm.scale);
      const float ml = dmin * static_cast<float>(sm.min);
      dst[b * kSuperBlockElems + e] = dl * static_cast<float>(q) - ml;
    }
  }
}

// x = ((f16(d) * (0.5 + s)) * 0.25) * g, negated where the sign bit is set
// (= f16(d) * (2s+1)/8 * +-g exactly: the factors 2 and 1/8 are powers of two)
void dequantize_row_iq2_xxs(const BlockIQ2_XXS* src, float* dst, int64_t n) {
  const int64_t nb = whole_blocks(n, kSuperBlockElems);
  for (int64_t b = 0; b < nb; ++b) {
    const float d = f16_to_f32(src[b].d);
    for (int ib32 = 0; ib32 < 8; ++ib32) {
      const Iq2xxsGroup g = iq2xxs_group(src[b], ib32);
      const float db = d * (0.5f + static_cast<float>(g.scale)) * 0.25f;
      for (int k = 0; k < 4; ++k) {
        const uint8_t signs = kIq2Signs[g.signs[k]];
        for (int j = 0; j < 8; ++j) {
          const float mag = static_cast<float>(iq2xxs_grid_byte(g.grid[k], j));
          const float v = db * mag;
          dst[b * kSuperBlockElems + ib32 * 32 + k * 8 + j] = ((signs >> j) & 1) ? -v : v;
        }
      }
    }
  }
}

bool can_dequantize(gguf::GgufType t) {
  using T = gguf::GgufType;
  switch (t) {
    case T::kF32:
    case T::kF16:
    case T::kBF16:
    case T::kQ8_0:
    case T::kQ8_K:
    case T::kQ2_K:
    case T::kQ4_K:
    case T::kIQ2_XXS: return true;
    default: return false;
  }
}

Status dequantize(gguf::GgufType t, const void* src, float* dst, int64_t n) {
  using T = gguf::GgufType;
  if (!can_dequantize(t)) {
    return Status::unimplemented("no dequantizer for type %s",
                                 std::string(gguf::to_string(t)).c_str());
  }
  const auto info = gguf::type_info(static_cast<uint32_t>(t));
  DS4_CHECK(info.has_value());
  if (n < 0 || n % info->block_elems != 0) {
    return Status::invalid_argument(
        "dequantize %s: %lld values is not a whole number of %u-value "
        "blocks",
        std::string(info->name).c_str(), static_cast<long long>(n), info->block_elems);
  }
  switch (t) {
    case T::kF32:
      if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      break;
    case T::kF16: dequantize_row_f16(static_cast<const uint16_t*>(src), dst, n); break;
    case T::kBF16: dequantize_row_bf16(static_cast<const uint16_t*>(src), dst, n); break;
    case T::kQ8_0: dequantize_row_q8_0(static_cast<const BlockQ8_0*>(src), dst, n); break;
    case T::kQ8_K: dequantize_row_q8_k(static_cast<const BlockQ8_K*>(src), dst, n); break;
    case T::kQ2_K: dequantize_row_q2_k(static_cast<const BlockQ2_K*>(src), dst, n); break;
    case T::kQ4_K: dequantize_row_q4_k(static_cast<const BlockQ4_K*>(src), dst, n); break;
    case T::kIQ2_XXS: dequantize_row_iq2_xxs(static_cast<const BlockIQ2_XXS*>(src), dst, n); break;
    default: DS4_CHECK_MSG(false, "unreachable type %u", static_cast<unsigned>(t));
  }
  return Status::ok();
}

}  // namespace ds4::quant
