// src/backend/routing.cpp
#include "backend/routing.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "base/det_math.h"

namespace ds4::backend {
namespace {

constexpr float kWeightSumFloor = 6.103515625e-5f;  // 2^-14
constexpr int kMaxUsed = 64;

float softplus(float z) {
  if (z > 20.0f) return z;
  if (z < -20.0f) return detmath::expf(z);
  return detmath::log1pf(detmath::expf(z));
}

// Top-k by insertion into a descending list; a later expert enters only when strictly better, so
// ties keep the lower id first.
void top_k(const float* p, const float* bias, int n, int k, int32_t* sel) {
  float best[kMaxUsed];
  int have = 0;
  for (int e = 0; e < n; ++e) {
    const float score = bias != nullptr ? p[e] + bias[e] : p[e];
    int at = have;
    while (at > 0 && score > best[at - 1]) --at;
    if (at >= k) continue;
    for (int i = std::min(have, k - 1); i > at; --i) {
      best[i] = best[i - 1];
      sel[i] = sel[i - 1];
    }
    best[at] = score;
    sel[at] = e;
    have = std::min(have + 1, k);
  }
}

}  // namespace

void route_token(float* logits, int n_expert, const float* bias, const int32_t* tid2eid_row, int k,
                 float weight_scale, int32_t* sel, float* weights) {
  DS4_CHECK(k >= 1 && k <= kMaxUsed && k <= n_expert);
  for (int e = 0; e < n_expert; ++e) logits[e] = std::sqrt(softplus(logits[e]));
  if (tid2eid_row != nullptr) {
    for (int i = 0; i < k; ++i) {
      sel[i] = tid2eid_row[i];
      DS4_CHECK_MSG(sel[i] >= 0 && sel[i] < n_expert, "hash table expert %d out of range", sel[i]);
    }
  } else {
    top_k(logits, bias, n_expert, k, sel);
  }
  float sum = 0.0f;
  for (int i = 0; i < k; ++i) sum += logits[sel[i]];
  sum = std::max(sum, kWeightSumFloor);
  for (int i = 0; i < k; ++i) weights[i] = (logits[sel[i]] / sum) * weight_scale;
}

}  // namespace ds4::backend
