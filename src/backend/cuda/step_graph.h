// src/backend/cuda/step_graph.h: one forward step recorded from a stream and submitted as a CUDA
// graph. Each step is captured anew (its kernel arguments change with the position) and the
// executable graph is updated in place when the step has the previous one's shape, so the host
// queues one graph launch instead of ~2,000 kernel launches per decoded token. Steps differ in
// topology (a compressor emits a row every 4th or 128th position), so a few executable graphs
// are kept, keyed by node count; a key whose update fails is instantiated again.
// Owns: the executable graph. Does not own: the stream, or deciding which steps to capture
// (CudaBackend::begin_step).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace ds4::backend::cuda {

class StepGraph {
 public:
  StepGraph() = default;
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  // Starts recording `stream` (the calling thread may make no synchronising CUDA call until
  // end_and_launch).
  void begin(cudaStream_t stream);
  bool recording() const { return recording_; }
  // Stops recording, brings the executable graph of the recorded topology up to date (an
  // in-place update, else a fresh instantiation) and launches it on `stream`. Also the way to
  // cut a recording short (before an allocation): what was recorded runs, the rest eagerly.
  void end_and_launch(cudaStream_t stream);

  struct Counts {
    int64_t launches = 0;        // graphs launched
    int64_t instantiations = 0;  // of which needed a fresh executable graph
  };
  static constexpr int kSlots = 4;
  const Counts& counts() const { return counts_; }

 private:
  struct Slot {
    size_t nodes = 0;
    cudaGraphExec_t exec = nullptr;
    int64_t last_used = 0;
  };
  Slot slots_[kSlots];
  bool recording_ = false;
  Counts counts_;
};

}  // namespace ds4::backend::cuda
