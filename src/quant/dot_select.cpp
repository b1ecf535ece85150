// src/quant/dot_select.cpp: picks the dot-kernel table for this CPU and runs row-parallel matvecs.
// Owns: the one-time CPU feature check (baseline ISA code) and the matvec helper.
// Does not own: the kernels (dot_ref.cpp, x86/dot_avx2.cpp, x86/dot_avx512.cpp).
#include <algorithm>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "base/thread_pool.h"
#include "quant/activation.h"
#include "quant/dot.h"

#if defined(DS4_QUANT_HAVE_AVX2)
#include "quant/x86/dot_avx2.h"
#endif
#if defined(DS4_QUANT_HAVE_AVX512)
#include "quant/x86/dot_avx512.h"
#endif

namespace ds4::quant {
namespace {

constexpr int64_t kMinRowsPerTask = 16;
constexpr int64_t kTasksPerThread = 8;

// Bytes of one row of `cols` values of a dot-capable type.
int64_t row_bytes(gguf::GgufType t, int64_t cols) {
  const auto info = gguf::type_info(static_cast<uint32_t>(t));
  return cols / info->block_elems * info->block_bytes;
}

}  // namespace

const DotKernels* avx2_dot_kernels() {
#if defined(DS4_QUANT_HAVE_AVX2)
  static const DotKernels* const kTable =
      (base::cpu_features().avx2 && base::cpu_features().fma && base::cpu_features().f16c)
          ? &x86::avx2_kernels_unchecked()
          : nullptr;
  return kTable;
#else
  return nullptr;
#endif
}

const DotKernels* avx512_dot_kernels() {
#if defined(DS4_QUANT_HAVE_AVX512)
  static const DotKernels* const kTable = [] {
    const base::CpuFeatures& f = base::cpu_features();
    // avx512f already implies OS support for the opmask and ZMM state (XCR0 bits 5-7).
    const bool ok = avx2_dot_kernels() != nullptr && f.avx512f && f.avx512bw && f.avx512vl &&
                    f.avx512vnni && f.avx512vbmi && f.avx512bitalg;
    return ok ? &x86::avx512_kernels_unchecked() : nullptr;
  }();
  return kTable;
#else
  return nullptr;
#endif
}

const DotKernels& best_dot_kernels() {
  static const DotKernels& kBest = avx512_dot_kernels() != nullptr ? *avx512_dot_kernels()
                                   : avx2_dot_kernels() != nullptr ? *avx2_dot_kernels()
                                                                   : reference_dot_kernels();
  return kBest;
}

int64_t rows_per_task(int64_t rows, int threads) {
  const int64_t tasks = kTasksPerThread * threads;
  return std::max(kMinRowsPerTask, (rows + tasks - 1) / tasks);
}

bool has_dot(gguf::GgufType t) {
  using T = gguf::GgufType;
  return t == T::kF32 || t == T::kF16 || t == T::kQ8_0 || t == T::kQ2_K || t == T::kQ4_K ||
         t == T::kIQ2_XXS;
}

Status matvec(const DotKernels& k, gguf::GgufType t, const void* w, int64_t rows, int64_t cols,
              const float* x, float* y, base::ThreadPool* pool) {
  using T = gguf::GgufType;
  if (!has_dot(t)) {
    return Status::unimplemented("no dot kernel for type %s",
                                 std::string(gguf::to_string(t)).c_str());
  }
  const auto info = gguf::type_info(static_cast<uint32_t>(t));
  if (rows < 0 || cols < 0 || cols % info->block_elems != 0) {
    return Status::invalid_argument("matvec %s: %lld x %lld is not a whole number of blocks",
                                    std::string(info->name).c_str(), static_cast<long long>(rows),
                                    static_cast<long long>(cols));
  }
  std::vector<ActQ8_0> act8;
  std::vector<BlockQ8_K> actk;
  if (t == T::kQ8_0) {
    act8.resize(static_cast<size_t>(cols / kQ8_0BlockElems));
    quantize_act_q8_0(x, act8.data(), cols);
  } else if (t == T::kQ2_K || t == T::kQ4_K || t == T::kIQ2_XXS) {
    actk.resize(static_cast<size_t>(cols / kSuperBlockElems));
    quantize_act_q8_k(x, actk.data(), cols);
  }
  const int64_t stride = row_bytes(t, cols);
  const int64_t nb = cols / info->block_elems;
  const auto* base = static_cast<const uint8_t*>(w);
  const int64_t per_task = rows_per_task(rows, pool != nullptr ? pool->size() : 1);
  auto run_rows = [&](int64_t task) {
    const int64_t r0 = task * per_task, r_end = std::min(rows, (task + 1) * per_task);
    const void* first = base + r0 * stride;
    switch (t) {  // the 256-value formats: one multi-row call for the task's rows
      case T::kQ2_K:
        return k.q2_k_rows(static_cast<const BlockQ2_K*>(first), actk.data(), nb, r_end - r0,
                           y + r0);
      case T::kQ4_K:
        return k.q4_k_rows(static_cast<const BlockQ4_K*>(first), actk.data(), nb, r_end - r0,
                           y + r0);
      case T::kIQ2_XXS:
        return k.iq2_xxs_rows(static_cast<const BlockIQ2_XXS*>(first), actk.data(), nb, r_end - r0,
                              y + r0);
      default: break;
    }
    for (int64_t r = r0; r < r_end; ++r) {
      const void* row = base + r * stride;
      switch (t) {
        case T::kF32: y[r] = k.f32(static_cast<const float*>(row), x, cols); break;
        case T::kF16: y[r] = k.f16(static_cast<const uint16_t*>(row), x, cols); break;
        default: y[r] = k.q8_0(static_cast<const BlockQ8_0*>(row), act8.data(), nb); break;
      }
    }
  };
  const int64_t n_tasks = (rows + per_task - 1) / per_task;
  if (pool != nullptr && pool->size() > 1) {
    pool->parallel_for(n_tasks, run_rows);
  } else {
    for (int64_t task = 0; task < n_tasks; ++task) run_rows(task);
  }
  return Status::ok();
}

}  // namespace ds4::quant
