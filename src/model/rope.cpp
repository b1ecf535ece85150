// src/model/rope.cpp: RoPE/YaRN tables and rotation (see rope.h). The table is computed with the
// float32 operations, in the order, that the reference (transformers' YaRN initialiser) uses; the
// powers base^(2p/64) are correctly rounded to float32 (computed in double).
#include "model/rope.h"

#include <cmath>

#include "backend/rope.h"
#include "base/check.h"
#include "model/shape.h"

namespace ds4::model {
namespace {

// base^(2p/64) rounded to float32.
float pos_freq(double base, int p) { return static_cast<float>(std::pow(base, (2.0 * p) / 64.0)); }

// YaRN's correction dimension for a number of rotations (computed in double, as the reference).
double correction_dim(double rotations, double base) {
  return 64.0 * std::log(kYarnOrigContext / (rotations * 2.0 * M_PI)) / (2.0 * std::log(base));
}

}  // namespace

RopeTable rope_table(bool compressed) {
  RopeTable t{};
  if (!compressed) {
    for (int p = 0; p < kRopePairs; ++p) t.inv_freq[p] = 1.0f / pos_freq(kRopeFreqBase, p);
    return t;
  }
  const double base = kCompressRopeFreqBase;
  const double lo = std::max(0.0, std::floor(correction_dim(kYarnBetaFast, base)));
  const double hi = std::min(63.0, std::ceil(correction_dim(kYarnBetaSlow, base)));
  const float span = static_cast<float>(hi == lo ? hi + 0.001 - lo : hi - lo);
  for (int p = 0; p < kRopePairs; ++p) {
    const float f = pos_freq(base, p);
    const float extrapolation = 1.0f / f;
    const float interpolation = 1.0f / (kYarnFactor * f);
    float ramp = (static_cast<float>(p) - static_cast<float>(lo)) / span;
    ramp = std::fmin(std::fmax(ramp, 0.0f), 1.0f);
    const float extrap_factor = 1.0f - ramp;
    t.inv_freq[p] = interpolation * (1.0f - extrap_factor) + extrapolation * extrap_factor;
  }
  return t;
}

void rope_cos_sin(const RopeTable& t, int64_t pos, std::span<float, kRopePairs> cos,
                  std::span<float, kRopePairs> sin) {
  backend::rope_cos_sin(to_params(t), pos, cos.data(), sin.data());
}

void apply_rope(const RopeTable& t, int64_t pos, std::span<float> tail64, bool inverse) {
  DS4_CHECK(tail64.size() == 2 * kRopePairs);
  std::array<float, kRopePairs> c{}, s{};
  rope_cos_sin(t, pos, c, s);
  backend::rope_rotate(c.data(), s.data(), tail64.data(), inverse);
}

backend::RopeParams to_params(const RopeTable& t) {
  backend::RopeParams p;
  p.inv_freq = t.inv_freq;
  return p;
}

}  // namespace ds4::model
