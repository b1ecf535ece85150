// src/engine/engine_impl.h: what an Engine holds and what its sessions borrow.
// Owns: the mapped model file, the backend, the bound weights, the shared forward schedule and
// the scratch of a batched step.
#pragma once

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "ds4/engine.h"
#include "engine/power.h"
#include "gguf/reader.h"
#include "model/forward.h"
#include "model/shape.h"
#include "model/weights.h"

namespace ds4::backend {
class DiagnosticBackend;
}  // namespace ds4::backend

namespace ds4 {

struct Engine::Impl {
  EngineOptions options;
  ModelInfo info;
  std::optional<gguf::Reader> file;
  std::optional<gguf::Reader> mtp_file;  // EngineOptions::mtp_path, validated (model.md §2.4)
  model::Shape shape{};
  std::unique_ptr<backend::Backend> backend;
  // The backend itself when EngineOptions asks for op timing or repeats (it wraps the real one).
  backend::DiagnosticBackend* diagnostics = nullptr;
  model::ModelWeights weights;
  std::vector<float> steering_host;  // the direction file (steering.h); the CPU binds it in place
  std::optional<model::MtpWeights> mtp;     // bound from mtp_file
  std::unique_ptr<backend::Buffer> mtp_in;  // the MTP block's input rows, grown on demand
  int64_t mtp_in_rows = 0;
  std::unique_ptr<model::Forward> forward;
  PowerGovernor power;  // EngineOptions::power
  // After a unit of work begun at `start` (its results downloaded): the device's idle share
  // (waiting for it first when throttled, so the unit's time is the device's).
  void pace(PowerGovernor::Clock::time_point start);
  model::LayerRange range;  // the layers this engine computes (the whole model by default)
  bool whole_model() const { return range == model::full_range(shape); }
  // Sessions give logits: the whole model here, or a slice from layer 0 and a tail for the rest.
  bool gives_logits() const { return whole_model() || (tail && range.begin == 0); }
  std::shared_ptr<LayerTail> tail;
  uint64_t next_tail_session = 1;
  std::unique_ptr<backend::Buffer> logits;  // [rows][n_vocab], grown on demand
  int64_t logits_rows = 0;
  int next_seq = 0;
  // Engine::step scratch (grown, never shrunk, so a warm decode step does not allocate).
  std::vector<backend::RowTag> step_rows;
  std::vector<int> step_logit_rows;
  // The step's sessions in row order: each with its first row in the pass and the rows it kept.
  struct SteppedSession {
    Session::Impl* session;
    int r0;
    int kept;
  };
  std::vector<SteppedSession> step_sessions;
  std::vector<float> verify_logits;  // a verification entry's logits after each of its rows
  std::vector<backend::RowTag> mtp_tags;
  // After a step's forward: the MTP rows it completes (`rows` in all), in one pass of the block.
  void advance_mtp(int rows);

  backend::Act logits_view(int64_t rows);
  backend::Act mtp_in_view(int64_t rows);
  // `rows` x `cols` of `buffer`, reallocated (contents not kept) when it holds fewer rows.
  backend::Act grown_view(std::unique_ptr<backend::Buffer>& buffer, int64_t& capacity, int64_t rows,
                          int64_t cols);
};

}  // namespace ds4
