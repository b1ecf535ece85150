// src/quant/quantize_k.cpp: Q2_K and Q4_K encoders.
// Owns: the shared "scale and min per sub-block, quantised scales per super-block" search and the
//   two bit packings.
// Does not own: decoding (dequantize.cpp is the definition these encoders aim at).
//
// Both formats decode a sub-block as x = (d * sc) * q - dmin * m with unsigned codes q in
// [0, nmax] and unsigned integer sc, m in [0, scale_max]. The encoder works in three steps:
//   1. Per sub-block, fit x ~ a * q - b (a >= 0, b >= 0) minimising the weighted squared error:
//      try 11 candidate step sizes around (max - min) / nmax, round to codes, solve the 2x2
//      weighted least-squares problem for (a, b) given those codes, re-round, keep the best.
//   2. Quantise the sub-block a's and b's against d = max(a) / scale_max and dmin = max(b) /
//      scale_max (both rounded to f16); then move each integer sc, m by at most one step where
//      that lowers the sub-block's error, re-rounding codes against the decoded values.
//   3. Refit (d, dmin) jointly over the whole super-block for the fixed integers and codes (a 2x2
//      weighted least-squares problem), polish the integers again, and keep the refit while it
//      lowers the error (at most kSuperRefits times).
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "base/f16.h"
#include "quant/quantize.h"
#include "quant/quantize_internal.h"

namespace ds4::quant {
namespace {

using detail::clamp_int;
using detail::nearest_int;

struct KParams {
  int sub_blocks;  // sub-blocks per 256
  int sub_size;    // values per sub-block
  int nmax;        // largest code
  int scale_max;   // largest integer scale / min
};
constexpr KParams kQ2K{16, 16, 3, 15};
constexpr KParams kQ4K{8, 32, 15, 63};

constexpr int kStepCandidates = 11;  // step sizes tried per sub-block in step 1
constexpr float kStepSpread = 0.2f;  // candidate i uses nmax + (i - 5) * kStepSpread codes
constexpr int kSuperRefits = 2;

// The chosen encoding of one super-block.
struct KBlock {
  uint16_t d = 0;
  uint16_t dmin = 0;
  uint8_t sc[16] = {};
  uint8_t m[16] = {};
  uint8_t q[kSuperBlockElems] = {};
};

// Codes for x ~ a * q - b with q in [0, nmax]; returns the weighted squared error. `a` and `b` are
// the decoded factors, so the error is the one dequantisation will show.
float round_codes(const float* x, const float* w, int n, int nmax, float a, float b, uint8_t* q) {
  const float ia = a > 0.0f ? 1.0f / a : 0.0f;
  float err = 0.0f;
  for (int i = 0; i < n; ++i) {
    q[i] = static_cast<uint8_t>(clamp_int(nearest_int((x[i] + b) * ia), 0, nmax));
    const float diff = a * q[i] - b - x[i];
    err += w[i] * diff * diff;
  }
  return err;
}

struct AffineFit {
  float a;  // step
  float b;  // offset subtracted (>= 0)
};

// Step 1: weighted fit of one sub-block.
AffineFit fit_sub_block(const float* x, const float* w, int n, int nmax) {
  float lo = 0.0f;
  float hi = x[0];
  for (int i = 0; i < n; ++i) {
    lo = std::fmin(lo, x[i]);
    hi = std::fmax(hi, x[i]);
  }
  if (!(hi > lo)) return {0.0f, -lo};  // constant sub-block: exact with a = 0
  uint8_t q[kSuperBlockElems];
  AffineFit best{(hi - lo) / nmax, -lo};
  float best_err = round_codes(x, w, n, nmax, best.a, best.b, q);
  for (int c = 0; c < kStepCandidates; ++c) {
    const float iscale = (nmax + (c - kStepCandidates / 2) * kStepSpread) / (hi - lo);
    double sw = 0, sq = 0, sqq = 0, sx = 0, sqx = 0;
    for (int i = 0; i < n; ++i) {
      const int qi = clamp_int(nearest_int(iscale * (x[i] - lo)), 0, nmax);
      sw += w[i];
      sq += static_cast<double>(w[i]) * qi;
      sqq += static_cast<double>(w[i]) * qi * qi;
      sx += static_cast<double>(w[i]) * x[i];
      sqx += static_cast<double>(w[i]) * qi * x[i];
    }
    const double det = sw * sqq - sq * sq;
    if (!(det > 0.0)) continue;
    double a = (sw * sqx - sq * sx) / det;
    double offset = (sqq * sx - sq * sqx) / det;  // x ~ a * q + offset
    if (offset > 0.0) {                           // the format cannot add: pin the offset at 0
      offset = 0.0;
      a = sqx / sqq;
    }
    if (!(a > 0.0)) continue;
    const AffineFit cand{static_cast<float>(a), static_cast<float>(-offset)};
    const float err = round_codes(x, w, n, nmax, cand.a, cand.b, q);
    if (err < best_err) {
      best_err = err;
      best = cand;
    }
  }
  return best;
}

// Error of the whole super-block for the block's d/dmin/sc/m, re-rounding every code.
float encode_codes(const float* x, const float* w, const KParams& p, KBlock& k) {
  const float d = f16_to_f32(k.d);
  const float dmin = f16_to_f32(k.dmin);
  float err = 0.0f;
  for (int s = 0; s < p.sub_blocks; ++s) {
    const int off = s * p.sub_size;
    const float a = d * static_cast<float>(k.sc[s]);
    const float b = dmin * static_cast<float>(k.m[s]);
    err += round_codes(x + off, w + off, p.sub_size, p.nmax, a, b, k.q + off);
  }
  return err;
}

uint8_t quantize_factor(float v, float unit, int max) {
  if (!(unit > 0.0f)) return 0;
  return static_cast<uint8_t>(clamp_int(nearest_int(v / unit), 0, max));
}

// Step 3: refit (d, dmin) for fixed integers; returns false when the system is degenerate or the
// solution is outside the format (negative).
bool refit_super_scales(const float* x, const float* w, const KParams& p, const KBlock& k, float* d,
                        float* dmin) {
  double suu = 0, suv = 0, svv = 0, sux = 0, svx = 0;
  for (int e = 0; e < kSuperBlockElems; ++e) {
    const int s = e / p.sub_size;
    const double u = static_cast<double>(k.sc[s]) * k.q[e];  // x ~ d * u - dmin * v
    const double v = k.m[s];
    suu += w[e] * u * u;
    suv += w[e] * u * v;
    svv += w[e] * v * v;
    sux += w[e] * u * x[e];
    svx += w[e] * v * x[e];
  }
  const double det = suu * svv - suv * suv;
  if (det > 0.0) {
    *d = static_cast<float>((svv * sux - suv * svx) / det);
    *dmin = static_cast<float>((suv * sux - suu * svx) / det);
  } else if (suu > 0.0) {  // no mins in use: scale only
    *d = static_cast<float>(sux / suu);
    *dmin = 0.0f;
  } else {
    return false;
  }
  return *d >= 0.0f && *dmin >= 0.0f;
}

// Step 2b: with d and dmin fixed, move each sub-block's integer scale and min by at most one step
// where that lowers its error (rounding a and b separately is not jointly optimal).
void polish_integers(const float* x, const float* w, const KParams& p, KBlock& k) {
  const float d = f16_to_f32(k.d);
  const float dmin = f16_to_f32(k.dmin);
  uint8_t q[kSuperBlockElems];
  for (int s = 0; s < p.sub_blocks; ++s) {
    const int off = s * p.sub_size;
    int best_sc = k.sc[s];
    int best_m = k.m[s];
    float best = INFINITY;
    for (int sc = k.sc[s] - 1; sc <= k.sc[s] + 1; ++sc) {
      for (int m = k.m[s] - 1; m <= k.m[s] + 1; ++m) {
        if (sc < 0 || sc > p.scale_max || m < 0 || m > p.scale_max) continue;
        const float err = round_codes(x + off, w + off, p.sub_size, p.nmax,
                                      d * static_cast<float>(sc), dmin * static_cast<float>(m), q);
        if (err < best) {
          best = err;
          best_sc = sc;
          best_m = m;
        }
      }
    }
    k.sc[s] = static_cast<uint8_t>(best_sc);
    k.m[s] = static_cast<uint8_t>(best_m);
  }
}

void encode_k_block(const float* x, const float* importance, const KParams& p, KBlock& k) {
  float w[kSuperBlockElems];
  detail::element_weights(importance, kSuperBlockElems, w);
  AffineFit fits[16];
  float max_a = 0.0f;
  float max_b = 0.0f;
  for (int s = 0; s < p.sub_blocks; ++s) {
    fits[s] = fit_sub_block(x + s * p.sub_size, w + s * p.sub_size, p.sub_size, p.nmax);
    max_a = std::fmax(max_a, fits[s].a);
    max_b = std::fmax(max_b, fits[s].b);
  }
  k.d = f32_to_f16(max_a / p.scale_max);
  k.dmin = f32_to_f16(max_b / p.scale_max);
  for (int s = 0; s < p.sub_blocks; ++s) {
    k.sc[s] = quantize_factor(fits[s].a, f16_to_f32(k.d), p.scale_max);
    k.m[s] = quantize_factor(fits[s].b, f16_to_f32(k.dmin), p.scale_max);
  }
  polish_integers(x, w, p, k);
  float err = encode_codes(x, w, p, k);
  for (int it = 0; it < kSuperRefits; ++it) {
    float d = 0.0f;
    float dmin = 0.0f;
    if (!refit_super_scales(x, w, p, k, &d, &dmin)) break;
    KBlock trial = k;
    trial.d = f32_to_f16(d);
    trial.dmin = f32_to_f16(dmin);
    polish_integers(x, w, p, trial);
    const float trial_err = encode_codes(x, w, p, trial);
    if (!(trial_err < err)) break;
    err = trial_err;
    k = trial;
  }
}

void pack_q2_k(const KBlock& k, BlockQ2_K& y) {
  y.d = k.d;
  y.dmin = k.dmin;
  for (int s = 0; s < 16; ++s) y.scales[s] = static_cast<uint8_t>(k.sc[s] | (k.m[s] << 4));
  std::memset(y.qs, 0, sizeof(y.qs));
  for (int e = 0; e < kSuperBlockElems; ++e) {
    const Q2KPosition pos = q2_k_position(e);
    y.qs[pos.byte] = static_cast<uint8_t>(y.qs[pos.byte] | (k.q[e] << pos.shift));
  }
}

// Inverse of q4_k_scale_min() (blocks.h).
void pack_q4_k(const KBlock& k, BlockQ4_K& y) {
  y.d = k.d;
  y.dmin = k.dmin;
  for (int j = 0; j < 4; ++j) {
    y.scales[j] = static_cast<uint8_t>((k.sc[j] & 63) | ((k.sc[j + 4] >> 4) << 6));
    y.scales[j + 4] = static_cast<uint8_t>((k.m[j] & 63) | ((k.m[j + 4] >> 4) << 6));
    y.scales[j + 8] = static_cast<uint8_t>((k.sc[j + 4] & 15) | ((k.m[j + 4] & 15) << 4));
  }
  std::memset(y.qs, 0, sizeof(y.qs));
  for (int e = 0; e < kSuperBlockElems; ++e) {
    const Q4KPosition pos = q4_k_position(e);
    y.qs[pos.byte] = static_cast<uint8_t>(y.qs[pos.byte] | (k.q[e] << (pos.high ? 4 : 0)));
  }
}

}  // namespace

void quantize_row_q2_k(const float* x, BlockQ2_K* y, int64_t n, const float* importance) {
  DS4_CHECK_MSG(n >= 0 && n % kSuperBlockElems == 0, "n=%lld", static_cast<long long>(n));
  for (int64_t b = 0; b < n / kSuperBlockElems; ++b) {
    const int64_t off = b * kSuperBlockElems;
    KBlock k;
    encode_k_block(x + off, importance != nullptr ? importance + off : nullptr, kQ2K, k);
    pack_q2_k(k, y[b]);
  }
}

void quantize_row_q4_k(const float* x, BlockQ4_K* y, int64_t n, const float* importance) {
  DS4_CHECK_MSG(n >= 0 && n % kSuperBlockElems == 0, "n=%lld", static_cast<long long>(n));
  for (int64_t b = 0; b < n / kSuperBlockElems; ++b) {
    const int64_t off = b * kSuperBlockElems;
    KBlock k;
    encode_k_block(x + off, importance != nullptr ? importance + off : nullptr, kQ4K, k);
    pack_q4_k(k, y[b]);
  }
}

}  // namespace ds4::quant
