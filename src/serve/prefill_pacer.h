// src/serve/prefill_pacer.h: how many prompt rows a batched step may carry while other requests
// are decoding (issue 55: a long prompt must not freeze the streams beside it).
// A step holding decode rows and a prefill chunk costs about a + b * rows: a for the decode rows,
// b per prompt row. The pacer keeps a quantum q of prompt rows and, after each step that held
// both, moves it by the ratio of the target step time to the measured one: q <- q * target / T.
// Its fixed point is T = target (the decoders get a token every `target` seconds) and it is
// reached without knowing a or b; where the decode rows alone take the target or more, q falls to
// kMinPrefillQuantum so the prompt still advances. Steps without decode rows are not paced, nor
// steps where the requests still prefilling (waiting for their first token) outnumber the
// decoding ones: a burst of new requests is prefilled at full chunks until half of them decode,
// rather than all of them waiting on steps cut for the first few streams (issue 55: time to first
// token at 16 clients). A long prompt beside decoding streams is paced. An unpaced step's prompt
// rows measure b (with a inside the time when something decoded): the quantum is then set to what
// fills the target with prompt rows (an upper bound with a = 0), so the first paced step after it
// is not far over the target.
// Owns: the quantum. Does not own: the clock (the scheduler times its steps) or the step's budget.
#pragma once

#include <cstddef>

namespace ds4::serve {

// Prompt rows a paced step carries at least: a long prompt still advances however slow the decode
// rows beside it are (64 rows is a few ms of a GPU prefill, a fraction of one decode step).
inline constexpr size_t kMinPrefillQuantum = 64;
// The quantum before the first measurement: a few tens of ms of a GPU prefill at ~4,000 tokens/s.
inline constexpr size_t kFirstPrefillQuantum = 256;
// One measurement moves the quantum by this factor at most, so one slow step (a page fault, a
// preempted thread) cannot collapse it, nor one fast step blow it up.
inline constexpr double kMaxPrefillQuantumMove = 2.0;

class PrefillPacer {
 public:
  // target_s <= 0: no pacing (a prompt takes what the step's budget leaves).
  explicit PrefillPacer(double target_s) : target_s_(target_s) {}

  // Whether a step with `decoding` requests decoding (a row each at least) and `prefilling`
  // requests in sessions still prefilling is paced: pacing is on, something decodes, and the
  // prefilling requests do not outnumber the decoding ones.
  bool paces(size_t decoding, size_t prefilling) const;
  // Prompt rows such a step may carry: the quantum within `budget` (what the step's token budget
  // leaves after its decode rows) when paced, else the whole budget.
  size_t rows(size_t decoding, size_t prefilling, size_t budget) const;
  // Such a step ran with prompt_rows prompt rows and took `seconds`: a paced step moves the
  // quantum; an unpaced one of kMinPrefillQuantum prompt rows or more sets it.
  void observe(size_t decoding, size_t prefilling, size_t prompt_rows, double seconds);
  size_t quantum() const { return quantum_; }

 private:
  // The quantum at most (the engine's step holds fewer rows anyway).
  static constexpr size_t kMaxQuantum = 1 << 16;
  double target_s_;
  size_t quantum_ = kFirstPrefillQuantum;
};

}  // namespace ds4::serve
