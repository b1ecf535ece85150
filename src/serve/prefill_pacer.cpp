// src/serve/prefill_pacer.cpp: see prefill_pacer.h.
#include "serve/prefill_pacer.h"

#include <algorithm>
#include <cmath>

namespace ds4::serve {

bool PrefillPacer::paces(size_t decoding, size_t prefilling) const {
  return target_s_ > 0 && decoding > 0 && prefilling <= decoding;
}

size_t PrefillPacer::rows(size_t decoding, size_t prefilling, size_t budget) const {
  return paces(decoding, prefilling) ? std::min(budget, quantum_) : budget;
}

void PrefillPacer::observe(size_t decoding, size_t prefilling, size_t prompt_rows, double seconds) {
  if (target_s_ <= 0 || prompt_rows == 0 || !(seconds > 0)) return;
  if (!paces(decoding, prefilling)) {
    if (prompt_rows < kMinPrefillQuantum) return;  // too short to say what a row costs
    const double fill = target_s_ * static_cast<double>(prompt_rows) / seconds;
    quantum_ = static_cast<size_t>(std::clamp(fill, static_cast<double>(kMinPrefillQuantum),
                                              static_cast<double>(kMaxQuantum)));
    return;
  }
  // Moved from the rows the step really carried: a prompt's last chunk is shorter than the
  // quantum, and its step time says little about a full one, so only a step that used the whole
  // quantum may raise it.
  const double ratio =
      std::clamp(target_s_ / seconds, 1.0 / kMaxPrefillQuantumMove, kMaxPrefillQuantumMove);
  if (ratio > 1 && prompt_rows < quantum_) return;
  const double next = static_cast<double>(prompt_rows) * ratio;
  quantum_ = std::max(kMinPrefillQuantum, static_cast<size_t>(std::llround(next)));
}

}  // namespace ds4::serve
