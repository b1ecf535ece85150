// src/quant/activation.cpp: activation encoders for the integer dots (model.md §3.3).
// Owns: the exact rounding rules; any change here changes every CPU matmul result.
// Does not own: the dots that consume these blocks (dot_ref.cpp, x86/).
//
// lrintf rounds to nearest with ties to even under the default floating-point environment, which
// the engine never changes. Clamping happens on the long result so out-of-range values saturate.
#include "quant/activation.h"

#include <cmath>

#include "base/check.h"

namespace ds4::quant {
namespace {

int8_t clamp_to_i8(long v) {
  if (v < -128) return -128;
  if (v > 127) return 127;
  return static_cast<int8_t>(v);
}

}  // namespace

void quantize_act_q8_0(const float* x, ActQ8_0* out, int64_t n) {
  DS4_CHECK_MSG(n >= 0 && n % kQ8_0BlockElems == 0, "n=%lld", static_cast<long long>(n));
  const int64_t nb = n / kQ8_0BlockElems;
  for (int64_t b = 0; b < nb; ++b) {
    const float* xb = x + b * kQ8_0BlockElems;
    float amax = 0.0f;
    for (int i = 0; i < kQ8_0BlockElems; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = d;
    for (int i = 0; i < kQ8_0BlockElems; ++i) out[b].qs[i] = clamp_to_i8(std::lrintf(xb[i] * id));
  }
}

void quantize_act_q8_k(const float* x, BlockQ8_K* out, int64_t n) {
  DS4_CHECK_MSG(n >= 0 && n % kSuperBlockElems == 0, "n=%lld", static_cast<long long>(n));
  const int64_t nb = n / kSuperBlockElems;
  for (int64_t b = 0; b < nb; ++b) {
    const float* xb = x + b * kSuperBlockElems;
    BlockQ8_K& y = out[b];
    float amax = 0.0f;
    float max = 0.0f;
    for (int i = 0; i < kSuperBlockElems; ++i) {
      const float ax = std::fabs(xb[i]);
      if (ax > amax) {  // strict: the first of equal magnitudes wins
        amax = ax;
        max = xb[i];
      }
    }
    if (amax == 0.0f) {
      y.d = 0.0f;
      for (int i = 0; i < kSuperBlockElems; ++i) y.qs[i] = 0;
      for (int g = 0; g < 16; ++g) y.bsums[g] = 0;
      continue;
    }
    const float iscale = -127.0f / max;
    for (int i = 0; i < kSuperBlockElems; ++i) y.qs[i] = clamp_to_i8(std::lrintf(iscale * xb[i]));
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += y.qs[16 * g + i];
      y.bsums[g] = static_cast<int16_t>(sum);
    }
    y.d = 1.0f / iscale;
  }
}

}  // namespace ds4::quant
