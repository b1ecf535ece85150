// src/backend/cuda/step_graph.h: one forward step recorded from a stream and submitted as CUDA
// graphs. Each step is captured anew (its kernel arguments change with the position) and the
// executable graphs are updated in place when the step has the previous one's shape, so the host
// queues a few graph launches instead of ~2,000 kernel launches per decoded token.
//
// A step is cut into segments at boundaries the caller marks (every `marks_per_segment`-th call
// of boundary(): a sublayer each), and each segment is launched as soon as it is recorded, so the
// GPU runs segment k while the host records segment k + 1. (Captured whole, the GPU idled while
// the host recorded the step: graphs measured slower than eager launches.) Segments differ in
// topology from step to step (a compressor emits a row every 4th or 128th position), so each
// segment index keeps a few executable graphs, keyed by node count; a key whose update fails is
// instantiated again.
// Owns: the executable graphs. Does not own: the stream, or deciding which steps to capture
// (CudaBackend::begin_step).
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ds4::backend::cuda {

class StepGraph {
 public:
  // marks_per_segment: boundary() calls per segment; 0 records the whole step as one graph.
  explicit StepGraph(int marks_per_segment = 0) : marks_per_segment_(marks_per_segment) {}
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  // Starts recording a step on `stream` (the calling thread may make no synchronising CUDA call
  // until end_and_launch).
  void begin(cudaStream_t stream);
  bool recording() const { return recording_; }
  // A point between two parts of the step (a sublayer's start): every marks_per_segment-th one
  // launches what was recorded since the last cut and records on. Nothing when not recording.
  void boundary(cudaStream_t stream);
  // Stops recording, brings the executable graph of the last segment up to date (an in-place
  // update, else a fresh instantiation) and launches it on `stream`. Also the way to cut a
  // recording short (before an allocation): what was recorded runs, the rest eagerly.
  void end_and_launch(cudaStream_t stream);

  struct Counts {
    int64_t launches = 0;        // graphs (segments) launched
    int64_t instantiations = 0;  // of which needed a fresh executable graph
  };
  static constexpr int kSlots = 4;  // topologies kept per segment index
  const Counts& counts() const { return counts_; }

 private:
  struct Slot {
    size_t nodes = 0;
    cudaGraphExec_t exec = nullptr;
    int64_t last_used = 0;
  };
  void start_capture(cudaStream_t stream);
  void launch_segment(cudaStream_t stream);

  std::vector<std::array<Slot, kSlots>> segments_;
  int marks_per_segment_ = 0;
  int marks_ = 0;    // boundary() calls in the current segment
  int segment_ = 0;  // index of the segment being recorded
  bool recording_ = false;
  Counts counts_;
};

}  // namespace ds4::backend::cuda
