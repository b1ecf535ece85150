// src/backend/cpu/matmul.cpp: activation encoding and the parallel matmul.
#include "backend/cpu/matmul.h"

#include <algorithm>
#include <string>

#include "base/check.h"
#include "quant/activation.h"

namespace ds4::backend::cpu {
namespace {

using gguf::GgufType;
// Weight rows handed to one multi-row kernel call (a few KiB to a few tens of KiB of weights).
constexpr int64_t kRowsPerCall = 16;

bool uses_q8_k(GgufType t) {
  return t == GgufType::kQ2_K || t == GgufType::kQ4_K || t == GgufType::kIQ2_XXS;
}

}  // namespace

int64_t row_bytes(GgufType t, int64_t cols) {
  const auto info = gguf::type_info(static_cast<uint32_t>(t));
  DS4_CHECK(info.has_value() && cols % info->block_elems == 0);
  return cols / info->block_elems * info->block_bytes;
}

void EncodedRows::encode(GgufType t, const float* x, int64_t rows, int64_t cols, int64_t stride) {
  DS4_CHECK_MSG(quant::has_dot(t), "no dot kernel for %s", std::string(gguf::to_string(t)).c_str());
  type_ = t;
  cols_ = cols;
  stride_ = stride;
  floats_ = x;
  if (t == GgufType::kQ8_0) {
    const int64_t nb = cols / quant::kQ8_0BlockElems;
    if (static_cast<int64_t>(q8_.size()) < rows * nb) q8_.resize(rows * nb);
    for (int64_t r = 0; r < rows; ++r) quant::quantize_act_q8_0(x + r * stride, &q8_[r * nb], cols);
  } else if (uses_q8_k(t)) {
    const int64_t nb = cols / quant::kSuperBlockElems;
    if (static_cast<int64_t>(qk_.size()) < rows * nb) qk_.resize(rows * nb);
    for (int64_t r = 0; r < rows; ++r) quant::quantize_act_q8_k(x + r * stride, &qk_[r * nb], cols);
  }
}

void EncodedRows::dot_rows(const quant::DotKernels& k, const void* w, int64_t n_w, int64_t r,
                           int64_t offset, int64_t n, float* out) const {
  const auto* base = static_cast<const uint8_t*>(w);
  const int64_t stride = row_bytes(type_, n);
  switch (type_) {  // one single-row dot per weight row
    case GgufType::kF32: {
      const float* xa = floats_ + r * stride_ + offset;
      for (int64_t i = 0; i < n_w; ++i) {
        out[i] = k.f32(reinterpret_cast<const float*>(base + i * stride), xa, n);
      }
      return;
    }
    case GgufType::kF16: {
      const float* xa = floats_ + r * stride_ + offset;
      for (int64_t i = 0; i < n_w; ++i) {
        out[i] = k.f16(reinterpret_cast<const uint16_t*>(base + i * stride), xa, n);
      }
      return;
    }
    case GgufType::kQ8_0: {
      const quant::ActQ8_0* xa =
          &q8_[r * (cols_ / quant::kQ8_0BlockElems) + offset / quant::kQ8_0BlockElems];
      for (int64_t i = 0; i < n_w; ++i) {
        out[i] = k.q8_0(reinterpret_cast<const quant::BlockQ8_0*>(base + i * stride), xa,
                        n / quant::kQ8_0BlockElems);
      }
      return;
    }
    default: break;
  }
  // The 256-value formats: one multi-row kernel call.
  const quant::BlockQ8_K* xa =
      &qk_[r * (cols_ / quant::kSuperBlockElems) + offset / quant::kSuperBlockElems];
  const int64_t nblk = n / quant::kSuperBlockElems;
  switch (type_) {
    case GgufType::kQ2_K:
      return k.q2_k_rows(static_cast<const quant::BlockQ2_K*>(w), xa, nblk, n_w, out);
    case GgufType::kQ4_K:
      return k.q4_k_rows(static_cast<const quant::BlockQ4_K*>(w), xa, nblk, n_w, out);
    case GgufType::kIQ2_XXS:
      return k.iq2_xxs_rows(static_cast<const quant::BlockIQ2_XXS*>(w), xa, nblk, n_w, out);
    default: DS4_CHECK_MSG(false, "unsupported weight type");
  }
}

void matmul(base::ThreadPool& pool, const quant::DotKernels& k, const Weight& w,
            const EncodedRows& x, int64_t n_rows, int groups, Act y) {
  const int64_t out = w.ne[1], cols = w.ne[0], per_group = out / groups;
  const int64_t stride = row_bytes(w.type, cols);
  const auto* base = static_cast<const uint8_t*>(w.data);
  // Tasks as quant::rows_per_task cuts them; every output is still the same dot, so results do
  // not depend on the cut.
  const int64_t per_task = quant::rows_per_task(out, pool.size());
  const int64_t n_tasks = (out + per_task - 1) / per_task;
  pool.parallel_for(n_tasks, [&](int64_t task) {
    const int64_t o_end = std::min(out, (task + 1) * per_task);
    for (int64_t o = task * per_task; o < o_end;) {
      // Up to kRowsPerCall weight rows of one group at a time, against every activation row
      // while they are in cache.
      const int64_t group = o / per_group;
      const int64_t o1 = std::min({o_end, (group + 1) * per_group, o + kRowsPerCall});
      for (int64_t r = 0; r < n_rows; ++r) {
        x.dot_rows(k, base + o * stride, o1 - o, r, group * cols, cols, y.row(r) + o);
      }
      o = o1;
    }
  });
}

}  // namespace ds4::backend::cpu
