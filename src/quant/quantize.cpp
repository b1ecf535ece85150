// src/quant/quantize.cpp: quantize_rows() dispatch and the simple encoders (F16, BF16, Q8_0).
// Owns: argument validation, row fan-out, the plain-float formats and the Q8_0 search.
// Does not own: the K-quant encoders (quantize_k.cpp) and IQ2_XXS (quantize_iq2.cpp).
#include "quant/quantize.h"

#include <cmath>
#include <cstring>
#include <string>

#include "base/check.h"
#include "base/f16.h"
#include "base/thread_pool.h"
#include "quant/activation.h"
#include "quant/quantize_internal.h"

namespace ds4::quant {
namespace {

using detail::clamp_int;
using detail::nearest_int;

// Codes for one Q8_0 block at scale d (f16-representable); returns the weighted squared error.
float q8_0_codes(const float* x, const float* w, float d, int8_t* q) {
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  float err = 0.0f;
  for (int i = 0; i < kQ8_0BlockElems; ++i) {
    q[i] = static_cast<int8_t>(clamp_int(nearest_int(x[i] * id), -127, 127));
    const float diff = d * q[i] - x[i];
    err += w[i] * diff * diff;
  }
  return err;
}

// d = amax / 127 rounded to f16, then one weighted least-squares refit of d for the chosen codes;
// the refit is kept when it lowers the weighted error.
void quantize_block_q8_0(const float* x, const float* importance, BlockQ8_0& y) {
  float w[kQ8_0BlockElems];
  detail::element_weights(importance, kQ8_0BlockElems, w);
  float amax = 0.0f;
  for (int i = 0; i < kQ8_0BlockElems; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  uint16_t d_bits = f32_to_f16(amax / 127.0f);
  float err = q8_0_codes(x, w, f16_to_f32(d_bits), y.qs);
  double sxq = 0.0;
  double sqq = 0.0;
  for (int i = 0; i < kQ8_0BlockElems; ++i) {
    sxq += static_cast<double>(w[i]) * x[i] * y.qs[i];
    sqq += static_cast<double>(w[i]) * y.qs[i] * y.qs[i];
  }
  if (sqq > 0.0) {
    const uint16_t refit_bits = f32_to_f16(static_cast<float>(sxq / sqq));
    int8_t q[kQ8_0BlockElems];
    const float refit_err = q8_0_codes(x, w, f16_to_f32(refit_bits), q);
    if (refit_err < err) {
      err = refit_err;
      d_bits = refit_bits;
      std::memcpy(y.qs, q, sizeof(q));
    }
  }
  y.d = d_bits;
}

Status check_importance(const float* importance, int64_t n_cols) {
  if (importance == nullptr) return Status::ok();
  for (int64_t i = 0; i < n_cols; ++i) {
    if (!(importance[i] >= 0.0f) || !std::isfinite(importance[i])) {
      return Status::invalid_argument("importance[%lld] = %g is not a finite non-negative weight",
                                      static_cast<long long>(i),
                                      static_cast<double>(importance[i]));
    }
  }
  return Status::ok();
}

void quantize_one_row(gguf::GgufType t, const float* x, void* y, int64_t n,
                      const float* importance) {
  using T = gguf::GgufType;
  switch (t) {
    case T::kF32: std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float)); break;
    case T::kF16: quantize_row_f16(x, static_cast<uint16_t*>(y), n); break;
    case T::kBF16: quantize_row_bf16(x, static_cast<uint16_t*>(y), n); break;
    case T::kQ8_0: quantize_row_q8_0(x, static_cast<BlockQ8_0*>(y), n, importance); break;
    case T::kQ8_K: quantize_act_q8_k(x, static_cast<BlockQ8_K*>(y), n); break;
    case T::kQ2_K: quantize_row_q2_k(x, static_cast<BlockQ2_K*>(y), n, importance); break;
    case T::kQ4_K: quantize_row_q4_k(x, static_cast<BlockQ4_K*>(y), n, importance); break;
    case T::kIQ2_XXS: quantize_row_iq2_xxs(x, static_cast<BlockIQ2_XXS*>(y), n, importance); break;
    default: DS4_CHECK_MSG(false, "no encoder for type %u", static_cast<unsigned>(t));
  }
}

}  // namespace

void quantize_row_f16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_f16(x[i]);
}

void quantize_row_bf16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_bf16(x[i]);
}

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n, const float* importance) {
  DS4_CHECK_MSG(n >= 0 && n % kQ8_0BlockElems == 0, "n=%lld", static_cast<long long>(n));
  for (int64_t b = 0; b < n / kQ8_0BlockElems; ++b) {
    const int64_t off = b * kQ8_0BlockElems;
    quantize_block_q8_0(x + off, importance != nullptr ? importance + off : nullptr, y[b]);
  }
}

bool can_quantize(gguf::GgufType t) {
  using T = gguf::GgufType;
  return t == T::kF32 || t == T::kF16 || t == T::kBF16 || t == T::kQ8_0 || t == T::kQ8_K ||
         t == T::kQ2_K || t == T::kQ4_K || t == T::kIQ2_XXS;
}

Status quantize_rows(gguf::GgufType t, const float* src, void* dst, int64_t n_rows, int64_t n_cols,
                     const float* importance, base::ThreadPool* pool) {
  if (!can_quantize(t)) {
    return Status::unimplemented("no quantizer for type %s",
                                 std::string(gguf::to_string(t)).c_str());
  }
  const auto info = gguf::type_info(static_cast<uint32_t>(t));
  DS4_CHECK(info.has_value());
  if (n_rows < 0 || n_cols < 0 || n_cols % info->block_elems != 0) {
    return Status::invalid_argument(
        "quantize %s: %lld x %lld is not a whole number of %u-value "
        "blocks per row",
        std::string(info->name).c_str(), static_cast<long long>(n_rows),
        static_cast<long long>(n_cols), info->block_elems);
  }
  DS4_TRY(check_importance(importance, n_cols));
  const int64_t row_bytes = n_cols / info->block_elems * info->block_bytes;
  auto* out = static_cast<uint8_t*>(dst);
  auto one_row = [&](int64_t r) {
    quantize_one_row(t, src + r * n_cols, out + r * row_bytes, n_cols, importance);
  };
  if (pool != nullptr && pool->size() > 1) {
    pool->parallel_for(n_rows, one_row);
  } else {
    for (int64_t r = 0; r < n_rows; ++r) one_row(r);
  }
  return Status::ok();
}

}  // namespace ds4::quant
