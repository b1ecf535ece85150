// include/ds4/observer.h: read-only views of what a forward pass computes, for the tools that
// learn from the model's own activations (ds4-gguf imatrix: what reaches each routed expert).
// An observer is handed to the engine in EngineOptions::observer (not owned; it must outlive the
// engine) and called on the engine's thread during each pass, the spans valid for the call only.
// The CPU backend reports; the engine refuses an observer on another backend.
#pragma once

#include <cstdint>
#include <span>

namespace ds4 {

// One MoE sublayer of a pass: rows x k slots, slot j = row j / k's (j % k)-th expert.
struct ExpertInputs {
  int layer = 0;
  int64_t rows = 0;
  int k = 0;                         // experts per row
  int64_t n_embd = 0;                // columns of the gate and up projections' input
  int64_t n_ff = 0;                  // columns of the down projection's input
  std::span<const float> in;         // rows x n_embd: every selected expert's gate/up input
  std::span<const int32_t> experts;  // rows x k: the experts each row selected
  std::span<const float> weights;    // rows x k: their routing weights
  std::span<const float> down_in;    // rows*k x n_ff: each slot's down input (SwiGLU x weight)
};

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_expert_inputs(const ExpertInputs& inputs) = 0;
};

}  // namespace ds4
