// src/backend/cuda/step_graph.cpp: capture, update and launch of a step's CUDA graphs.
#include "backend/cuda/step_graph.h"

#include "backend/cuda/check.h"

namespace ds4::backend::cuda {

StepGraph::~StepGraph() {
  for (auto& slots : segments_) {
    for (Slot& s : slots) {
      if (s.exec != nullptr) cudaGraphExecDestroy(s.exec);
    }
  }
}

void StepGraph::start_capture(cudaStream_t stream) {
  // Thread-local mode: a synchronising call from this thread during the capture fails loudly
  // instead of silently serialising other threads' work.
  DS4_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
}

void StepGraph::begin(cudaStream_t stream) {
  DS4_CHECK(!recording_);
  start_capture(stream);
  recording_ = true;
  segment_ = 0;
  marks_ = 0;
}

void StepGraph::boundary(cudaStream_t stream) {
  if (!recording_ || marks_per_segment_ <= 0 || ++marks_ < marks_per_segment_) return;
  launch_segment(stream);
  ++segment_;
  marks_ = 0;
  start_capture(stream);
}

void StepGraph::end_and_launch(cudaStream_t stream) {
  DS4_CHECK(recording_);
  recording_ = false;
  launch_segment(stream);
}

void StepGraph::launch_segment(cudaStream_t stream) {
  cudaGraph_t graph = nullptr;
  DS4_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  size_t nodes = 0;
  DS4_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  if (static_cast<size_t>(segment_) >= segments_.size()) segments_.resize(segment_ + 1);
  auto& slots = segments_[segment_];
  // The slot of this node count, else the least recently used one.
  Slot* slot = &slots[0];
  for (Slot& s : slots) {
    if (s.exec != nullptr && s.nodes == nodes) {
      slot = &s;
      break;
    }
    if (s.last_used < slot->last_used) slot = &s;
  }
  if (slot->exec != nullptr && slot->nodes == nodes) {
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(slot->exec, graph, &info) != cudaSuccess) {
      // Another topology with the same node count: instantiate again. The failed update's
      // error is not sticky; clear it so the next launch check does not report it.
      cudaGetLastError();
      DS4_CUDA_CHECK(cudaGraphExecDestroy(slot->exec));
      slot->exec = nullptr;
    }
  } else if (slot->exec != nullptr) {
    DS4_CUDA_CHECK(cudaGraphExecDestroy(slot->exec));
    slot->exec = nullptr;
  }
  if (slot->exec == nullptr) {
    DS4_CUDA_CHECK(cudaGraphInstantiate(&slot->exec, graph, 0));
    slot->nodes = nodes;
    ++counts_.instantiations;
  }
  DS4_CUDA_CHECK(cudaGraphDestroy(graph));
  DS4_CUDA_CHECK(cudaGraphLaunch(slot->exec, stream));
  slot->last_used = ++counts_.launches;
}

}  // namespace ds4::backend::cuda
