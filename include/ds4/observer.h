// include/ds4/observer.h: read-only views of what a forward pass computes, for the tools that
// learn from the model's own activations (ds4-gguf imatrix: what reaches each routed expert;
// ds4-steer build: each layer's attention or FFN output). An observer is handed to the engine in
// EngineOptions::observer (not owned; it must outlive the engine) and called on the engine's
// thread during each pass, the spans valid for the call only. The CPU and CUDA backends report
// (the same values within their tolerances).
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

// The two sublayers of a layer whose outputs directional steering acts on (features.md §8).
enum class Sublayer { kAttention, kFfn };

// What one sublayer of a layer handed on for the rows of a pass: the attention block's output
// (after its output projection) or the FFN's (routed and shared experts), n_embd wide, before
// the hyper-connection mixes it into the residual streams and after directional steering.
struct SublayerOutputs {
  int layer = 0;
  Sublayer sublayer = Sublayer::kFfn;
  int64_t rows = 0;
  int64_t n_embd = 0;
  std::span<const float> values;       // rows x n_embd
  std::span<const int32_t> positions;  // rows: each row's position in its session
};

// Each method has a default that ignores the report, so an observer implements what it reads.
class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_expert_inputs(const ExpertInputs& /*inputs*/) {}
  virtual void on_sublayer_outputs(const SublayerOutputs& /*outputs*/) {}
};

}  // namespace ds4
