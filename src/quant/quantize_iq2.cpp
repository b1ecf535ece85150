// src/quant/quantize_iq2.cpp: IQ2_XXS encoder.
// Owns: sign selection, codebook search and the two-level scale search for IQ2_XXS.
// Does not own: the codebook (iq2_tables.inc) or decoding (dequantize.cpp).
//
// A 256-block decodes as x = d * (2s + 1) / 8 * (+-g), where d is one f16 per block, s a 4-bit
// scale per group of 32, g one of 256 codebook patterns of 8 magnitudes in {8, 25, 43} per group
// of 8, and the signs come from a table of the 128 even-parity sign patterns. The encoder:
//   1. Signs: per group of 8, take each element's own sign. If that gives an odd number of
//      negatives, flip the element with the smallest weighted square w * x^2 (the cheapest one to
//      get wrong). The targets t are the values times the chosen signs (one may be negative).
//   2. Group scale: per group of 32, try kGammaCandidates step sizes gamma = max(t) / L; for each,
//      pick the nearest codebook pattern for every group of 8 (weighted error, exhaustive over the
//      256 patterns unless the per-element nearest levels form a codebook pattern, which is then
//      optimal), refit gamma by weighted least squares for those patterns, keep the best.
//   3. Block scale: d = max(gamma) * 8 / 31 times a few factors (kBlockScaleFactors), rounded to
//      f16. For each d, every group of 32 takes the best s among the three nearest to its gamma,
//      re-running the pattern search at the exact decoded step; the d with the lowest total
//      weighted error wins.
// The exhaustive search's per-pattern sums do not depend on the step: each group of 8 computes
// them once for all its searches (PatternSums).

#include <cmath>
#include <cstring>

#include "base/check.h"
#include "base/f16.h"
#include "quant/iq2_tables.h"
#include "quant/quantize.h"
#include "quant/quantize_internal.h"

namespace ds4::quant {
namespace {

using detail::clamp_int;
using detail::nearest_int;

constexpr int kGammaCandidates = 12;
constexpr float kGammaFirstLevel = 30.0f;  // candidate c maps max(t) to level 30 + 1.5 c
constexpr float kGammaLevelStep = 1.5f;
constexpr float kBlockScaleFactors[] = {1.0f, 0.92f, 1.08f};
constexpr int kPatternCount = 6561;  // 3^8 level patterns of a group of 8

// Codebook as floats, and the inverse map from a level pattern (base-3 digits, element 0 least
// significant) to its codebook index (-1 when the pattern is not in the codebook).
struct GridTables {
  float mag[kIq2GridSize][8];
  float mag_by_elem[8][kIq2GridSize];   // transposed copies for the exhaustive search, which
  float mag2_by_elem[8][kIq2GridSize];  // then runs over 256 patterns at once (vectorisable)
  int16_t index_of_pattern[kPatternCount];
};

constexpr int level_index(uint8_t mag) { return mag == 8 ? 0 : (mag == 25 ? 1 : 2); }

constexpr GridTables make_grid_tables() {
  GridTables t{};
  for (int p = 0; p < kPatternCount; ++p) t.index_of_pattern[p] = -1;
  for (int g = 0; g < kIq2GridSize; ++g) {
    int pattern = 0;
    int place = 1;
    for (int j = 0; j < 8; ++j) {
      const uint8_t mag = iq2xxs_grid_byte(g, j);
      t.mag[g][j] = static_cast<float>(mag);
      t.mag_by_elem[j][g] = static_cast<float>(mag);
      t.mag2_by_elem[j][g] = static_cast<float>(mag * mag);
      pattern += level_index(mag) * place;
      place *= 3;
    }
    t.index_of_pattern[pattern] = static_cast<int16_t>(g);
  }
  return t;
}
constexpr GridTables kGrid = make_grid_tables();

// Weighted squared error of pattern g at step `step` against targets t.
float pattern_error(const float* t, const float* w, float step, int g) {
  float err = 0.0f;
  for (int j = 0; j < 8; ++j) {
    const float diff = step * kGrid.mag[g][j] - t[j];
    err += w[j] * diff * diff;
  }
  return err;
}

// The exhaustive search's sums over one group of 8 for every codebook pattern g: sum_j w_j g_j^2
// and sum_j w_j g_j t_j. They do not depend on the step, so the ~20 searches of a group (every
// candidate step of steps 2 and 3) compute them once (a group whose nearest levels form a
// codebook pattern never needs them). The same sums in the same order as computing them anew:
// the same bits.
struct PatternSums {
  bool ready = false;
  float sgg[kIq2GridSize];
  float sgt[kIq2GridSize];
};

// Index of the codebook pattern nearest to t / step under weights w; *err gets its error.
// `sums` caches the exhaustive search's sums for this t and w.
int nearest_pattern(const float* t, const float* w, float step, PatternSums& sums, float* err) {
  int pattern = 0;
  int place = 1;
  for (int j = 0; j < 8; ++j) {
    const float v = t[j] / step;
    pattern += (v < 16.5f ? 0 : (v < 34.0f ? 1 : 2)) * place;  // midpoints of 8 | 25 | 43
    place *= 3;
  }
  const int direct = kGrid.index_of_pattern[pattern];
  if (direct >= 0) {  // every element at its own nearest level: cannot be beaten
    *err = pattern_error(t, w, step, direct);
    return direct;
  }
  // Exhaustive: err(g) = sum w (step g - t)^2 = step (step sum w g^2 - 2 sum w g t) + const.
  float* sgg = sums.sgg;
  float* sgt = sums.sgt;
  if (!sums.ready) {
    for (int g = 0; g < kIq2GridSize; ++g) sgg[g] = sgt[g] = 0.0f;
    for (int j = 0; j < 8; ++j) {
      const float wj = w[j];
      const float wtj = w[j] * t[j];
      for (int g = 0; g < kIq2GridSize; ++g) {
        sgg[g] += wj * kGrid.mag2_by_elem[j][g];
        sgt[g] += wtj * kGrid.mag_by_elem[j][g];
      }
    }
    sums.ready = true;
  }
  // The first pattern of the lowest score, as a scalar scan with `<` finds it; the minimum is
  // taken over 8 lanes (vectorisable; min is exact in any order) and then located.
  constexpr int kLanes = 8;
  float score[kIq2GridSize];
  float lane_min[kLanes];
  for (int l = 0; l < kLanes; ++l) lane_min[l] = INFINITY;
  for (int g = 0; g < kIq2GridSize; g += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      score[g + l] = step * (step * sgg[g + l] - 2.0f * sgt[g + l]);
      lane_min[l] = score[g + l] < lane_min[l] ? score[g + l] : lane_min[l];
    }
  }
  float lowest = INFINITY;
  for (float m : lane_min) lowest = m < lowest ? m : lowest;
  int best = 0;
  if (lowest < INFINITY) {
    while (!(score[best] == lowest)) ++best;
  }
  *err = pattern_error(t, w, step, best);
  return best;
}

// Step 1 for one group of 8: even-parity sign pattern and signed targets.
uint8_t choose_signs(const float* x, const float* w, float* t) {
  int pattern = 0;
  int cheapest = 0;
  for (int j = 0; j < 8; ++j) {
    if (x[j] < 0.0f) pattern |= 1 << j;
    if (w[j] * x[j] * x[j] < w[cheapest] * x[cheapest] * x[cheapest]) cheapest = j;
  }
  if (__builtin_popcount(static_cast<unsigned>(pattern)) & 1) pattern ^= 1 << cheapest;
  for (int j = 0; j < 8; ++j) t[j] = ((pattern >> j) & 1) ? -x[j] : x[j];
  return static_cast<uint8_t>(pattern);
}

// Step 2: best continuous step for one group of 32 signed targets (sums: its 4 groups of 8).
float best_group_step(const float* t, const float* w, PatternSums* sums) {
  float tmax = 0.0f;
  for (int i = 0; i < 32; ++i) tmax = std::fmax(tmax, t[i]);
  if (!(tmax > 0.0f)) return 0.0f;
  float best_step = tmax / 43.0f;
  float best_err = INFINITY;
  for (int c = 0; c < kGammaCandidates; ++c) {
    const float step = tmax / (kGammaFirstLevel + kGammaLevelStep * static_cast<float>(c));
    int idx[4];
    double stg = 0.0;
    double sgg = 0.0;
    for (int k = 0; k < 4; ++k) {
      float unused = 0.0f;
      idx[k] = nearest_pattern(t + 8 * k, w + 8 * k, step, sums[k], &unused);
      for (int j = 0; j < 8; ++j) {
        const double g = kGrid.mag[idx[k]][j];
        stg += w[8 * k + j] * t[8 * k + j] * g;
        sgg += w[8 * k + j] * g * g;
      }
    }
    const float refit = sgg > 0.0 && stg > 0.0 ? static_cast<float>(stg / sgg) : step;
    float err = 0.0f;
    for (int k = 0; k < 4; ++k) err += pattern_error(t + 8 * k, w + 8 * k, refit, idx[k]);
    if (err < best_err) {
      best_err = err;
      best_step = refit;
    }
  }
  return best_step;
}

struct GroupChoice {
  Iq2xxsGroup header;
  float err;
};

// Step 3 for one group of 32 at a fixed decoded block scale d.
GroupChoice encode_group(const float* t, const float* w, const uint8_t* signs, float gamma, float d,
                         PatternSums* sums) {
  const int s0 = clamp_int(nearest_int((8.0f * gamma / d - 1.0f) * 0.5f), 0, 15);
  GroupChoice best{{}, INFINITY};
  for (int s = s0 - 1; s <= s0 + 1; ++s) {
    if (s < 0 || s > 15) continue;
    const float step = d * (0.5f + static_cast<float>(s)) * 0.25f;  // the decoder's expression
    GroupChoice c{{}, 0.0f};
    c.header.scale = static_cast<uint8_t>(s);
    for (int k = 0; k < 4; ++k) {
      float err = 0.0f;
      c.header.grid[k] =
          static_cast<uint8_t>(nearest_pattern(t + 8 * k, w + 8 * k, step, sums[k], &err));
      c.header.signs[k] = signs[k] & 127;  // bit 7 is implied by parity
      c.err += err;
    }
    if (c.err < best.err) best = c;
  }
  return best;
}

void encode_iq2_block(const float* x, const float* importance, BlockIQ2_XXS& y) {
  float w[kSuperBlockElems];
  detail::element_weights(importance, kSuperBlockElems, w);
  float t[kSuperBlockElems];
  uint8_t signs[32];
  PatternSums sums[32];
  float gamma[8];
  float max_gamma = 0.0f;
  for (int ib = 0; ib < 8; ++ib) {
    for (int k = 0; k < 4; ++k) {
      const int off = 32 * ib + 8 * k;
      signs[4 * ib + k] = choose_signs(x + off, w + off, t + off);
    }
    gamma[ib] = best_group_step(t + 32 * ib, w + 32 * ib, sums + 4 * ib);
    max_gamma = std::fmax(max_gamma, gamma[ib]);
  }
  std::memset(&y, 0, sizeof(y));
  if (!(max_gamma > 0.0f)) return;  // d = 0: the block decodes to zeros
  float best_err = INFINITY;
  for (const float factor : kBlockScaleFactors) {
    const uint16_t d_bits = f32_to_f16(max_gamma * 8.0f / 31.0f * factor);
    const float d = f16_to_f32(d_bits);
    if (!(d > 0.0f)) continue;
    BlockIQ2_XXS trial{};
    trial.d = d_bits;
    float err = 0.0f;
    for (int ib = 0; ib < 8; ++ib) {
      const GroupChoice c =
          encode_group(t + 32 * ib, w + 32 * ib, signs + 4 * ib, gamma[ib], d, sums + 4 * ib);
      set_iq2xxs_group(trial, ib, c.header);
      err += c.err;
    }
    if (err < best_err) {
      best_err = err;
      y = trial;
    }
  }
}

}  // namespace

void quantize_row_iq2_xxs(const float* x, BlockIQ2_XXS* y, int64_t n, const float* importance) {
  DS4_CHECK_MSG(n >= 0 && n % kSuperBlockElems == 0, "n=%lld", static_cast<long long>(n));
  for (int64_t b = 0; b < n / kSuperBlockElems; ++b) {
    const int64_t off = b * kSuperBlockElems;
    encode_iq2_block(x + off, importance != nullptr ? importance + off : nullptr, y[b]);
  }
}

}  // namespace ds4::quant
