// src/engine/engine.cpp: Engine::open -- map, validate, bind, build the schedule.
#include "ds4/engine.h"

#include <algorithm>
#include <string>

#include "backend/diagnostic_backend.h"
#include "backend/factory.h"
#include "engine/engine_impl.h"
#include "engine/session_impl.h"
#include "engine/steering.h"
#include "model/fingerprint.h"
#include "model/slice_file.h"
#include "model/validate.h"

namespace ds4 {
namespace {

constexpr int kMaxProblemsShown = 8;

backend::BackendKind to_backend(BackendKind k) {
  return k == BackendKind::kCuda ? backend::BackendKind::kCuda : backend::BackendKind::kCpu;
}

}  // namespace

backend::Act Engine::Impl::grown_view(std::unique_ptr<backend::Buffer>& buffer, int64_t& capacity,
                                      int64_t rows, int64_t cols) {
  if (rows > capacity) {
    buffer = backend->alloc(rows * cols);
    capacity = rows;
  }
  return buffer->view(rows, cols);
}

void Engine::Impl::pace(PowerGovernor::Clock::time_point start) {
  if (power.percent() < PowerGovernor::kMax) backend->wait_idle();
  power.pace(start);
}

backend::Act Engine::Impl::mtp_in_view(int64_t rows) {
  return grown_view(mtp_in, mtp_in_rows, rows, int64_t{shape.n_hc} * shape.n_embd);
}

backend::Act Engine::Impl::logits_view(int64_t rows) {
  return grown_view(logits, logits_rows, rows, shape.n_vocab);
}

namespace {

// The first problems of a file check, joined for one error line.
std::string joined_problems(const model::FileCheck& check) {
  std::string msg;
  const int shown = std::min<int>(kMaxProblemsShown, static_cast<int>(check.problems.size()));
  for (int i = 0; i < shown; ++i) msg += (i ? "; " : "") + check.problems[i];
  if (static_cast<int>(check.problems.size()) > shown) {
    msg += "; and " + std::to_string(check.problems.size() - shown) + " more";
  }
  return msg;
}

// The MTP draft file (model.md §2.4): validated like the main file (its tensors, types and
// shapes) and against the main model's shape, then kept mapped for the draft block.
Status open_mtp_file(Engine::Impl& impl, const std::string& path) {
  if (!impl.whole_model()) {
    return Status::invalid_argument("an MTP file drafts for the whole model, not for a slice");
  }
  auto file = gguf::Reader::open(path);
  if (!file.is_ok()) {
    return Status::invalid_file("cannot load MTP file '%s': %s", path.c_str(),
                                file.status().message().c_str());
  }
  const model::FileCheck check = model::check_model_file(*file);
  if (!check.mtp) {
    return Status::invalid_model("'%s' is not an MTP draft file (it has no mtp.0.* tensors)",
                                 path.c_str());
  }
  if (!check.problems.empty()) {
    return Status::invalid_model("'%s' is not a valid MTP file: %s", path.c_str(),
                                 joined_problems(check).c_str());
  }
  if (check.shape.name != impl.shape.name) {
    return Status::invalid_model("the MTP file '%s' is for the %s shape, the model '%s' is %s",
                                 path.c_str(), std::string(check.shape.name).c_str(),
                                 impl.options.model_path.c_str(),
                                 std::string(impl.shape.name).c_str());
  }
  impl.mtp_file.emplace(std::move(file).value());
  return Status::ok();
}

}  // namespace

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

const ModelInfo& Engine::info() const { return impl_->info; }
const EngineOptions& Engine::options() const { return impl_->options; }

Result<std::unique_ptr<Engine>> Engine::open(const EngineOptions& options) {
  DS4_TRY(check_steering(options.steering, !options.steering_file.empty()));
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  DS4_TRY(impl->power.set(options.power));
  auto file = gguf::Reader::open(options.model_path);
  if (!file.is_ok()) {
    return Status::invalid_file("cannot load model '%s': %s", options.model_path.c_str(),
                                file.status().message().c_str());
  }
  impl->file.emplace(std::move(file).value());
  const model::FileCheck check = model::check_model_file(*impl->file);
  if (check.mtp) {
    return Status::invalid_model("'%s' is an MTP draft file; load the main model file",
                                 options.model_path.c_str());
  }
  if (!check.problems.empty()) {
    return Status::invalid_model("'%s' is not a valid DeepSeek V4 model file: %s",
                                 options.model_path.c_str(), joined_problems(check).c_str());
  }
  impl->shape = check.shape;
  backend::BackendOptions bopts;
  bopts.threads = options.threads;
  bopts.cuda_blas = options.cuda_blas;
  DS4_ASSIGN_OR_RETURN(impl->backend, backend::make_backend(to_backend(options.backend), bopts));
  backend::Numerics num;
  num.qat_simulation = options.qat_simulation;
  num.f16_rows = options.f16_kv_rows;
  impl->backend->set_numerics(num);
  if (options.observer != nullptr) DS4_TRY(impl->backend->set_observer(options.observer));
  // Op timing and repeats: a backend in front of the real one, only when asked for.
  if (options.profile_ops || !options.repeat_op.empty()) {
    auto diag = std::make_unique<backend::DiagnosticBackend>(std::move(impl->backend));
    diag->set_profiling(options.profile_ops);
    if (!options.repeat_op.empty()) {
      // "op" or "matmul:TYPE:ROWS" (DiagnosticBackend::set_matmul_filter).
      const std::string_view spec = options.repeat_op;
      const size_t colon = spec.find(':');
      const auto op = backend::DiagnosticBackend::op_named(spec.substr(0, colon));
      if (!op) {
        return Status::invalid_argument("repeat_op '%s' is not a backend op",
                                        options.repeat_op.c_str());
      }
      if (colon != std::string_view::npos && *op != backend::DiagnosticBackend::kMatmul) {
        return Status::invalid_argument("repeat_op '%s': only matmul takes a product filter",
                                        options.repeat_op.c_str());
      }
      DS4_TRY(diag->set_op_repeat(*op, options.repeat_times));
      if (colon != std::string_view::npos) DS4_TRY(diag->set_matmul_filter(spec.substr(colon + 1)));
    }
    impl->diagnostics = diag.get();
    impl->backend = std::move(diag);
  }
  DS4_ASSIGN_OR_RETURN(impl->range, model::resolve_layer_slice(options.layers, impl->shape));
  if (check.slice && !model::range_contains(check.slice->range, impl->range)) {
    const bool whole = impl->range == model::full_range(impl->shape);
    return Status::invalid_argument(
        "'%s' is a slice file holding layers %s only: it cannot compute layers %s%s",
        options.model_path.c_str(), model::range_name(check.slice->range).c_str(),
        model::range_name(impl->range).c_str(), whole ? " (the whole model)" : "");
  }
  impl->tail = options.tail;
  if (impl->tail && (impl->range.begin != 0 || impl->range.head)) {
    return Status::invalid_argument(
        "a layer tail continues a slice that starts at layer 0 and ends before the head");
  }
  if (!impl->whole_model() && options.backend != BackendKind::kCpu) {
    return Status::unimplemented(
        "a layer slice (layers %d..%d) runs on the CPU backend only so far", impl->range.begin,
        impl->range.end - 1);
  }
  DS4_ASSIGN_OR_RETURN(impl->weights,
                       model::bind_weights(*impl->file, impl->shape, *impl->backend, impl->range));
  if (!options.steering_file.empty()) DS4_TRY(load_steering(*impl, options.steering_file));
  impl->forward = std::make_unique<model::Forward>(impl->shape, impl->weights, *impl->backend);
  ModelInfo& info = impl->info;
  info.steering = !options.steering_file.empty();
  info.shape = std::string(impl->shape.name);
  info.n_layer = impl->shape.n_layer;
  info.n_embd = impl->shape.n_embd;
  info.n_vocab = impl->shape.n_vocab;
  info.n_ctx_max = model::kMaxContext;
  info.file_bytes = impl->file->file_size();
  info.fingerprint = model::model_fingerprint(*impl->file);
  info.layer_first = impl->range.begin;
  info.layer_last = impl->range.end - 1;
  info.layer_output = impl->range.head;
  info.whole_model = impl->whole_model();
  info.hidden_width = impl->shape.n_hc * impl->shape.n_embd;
  if (!options.mtp_path.empty()) {
    DS4_TRY(open_mtp_file(*impl, options.mtp_path));
    DS4_ASSIGN_OR_RETURN(impl->mtp,
                         model::bind_mtp_weights(*impl->mtp_file, impl->shape, *impl->backend,
                                                 impl->weights.head.output));
  }
  info.mtp = impl->mtp_file.has_value();
  // The routed experts of the slice's last layer (a slice binds no other layer's).
  switch (impl->weights.layers[static_cast<size_t>(impl->range.end - 1)].moe.gate_exps.type) {
    case gguf::GgufType::kIQ2_XXS:
    case gguf::GgufType::kQ2_K: info.expert_bits = 2; break;
    case gguf::GgufType::kQ4_K: info.expert_bits = 4; break;
    case gguf::GgufType::kQ8_0: info.expert_bits = 8; break;
    case gguf::GgufType::kF16: info.expert_bits = 16; break;
    default: info.expert_bits = 32; break;
  }
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

std::vector<OpTime> Engine::op_times() const {
  using backend::DiagnosticBackend;
  std::vector<OpTime> out;
  if (impl_->diagnostics != nullptr) {
    for (const auto& t : impl_->diagnostics->op_times())
      out.push_back({std::string(t.op), t.seconds, t.calls});
  } else {
    for (int i = 0; i < DiagnosticBackend::kNumOps; ++i)
      out.push_back(
          {std::string(DiagnosticBackend::op_name(static_cast<DiagnosticBackend::Op>(i)))});
  }
  return out;
}

Status Engine::set_power(int percent) { return impl_->power.set(percent); }
int Engine::power() const { return impl_->power.percent(); }
PowerStats Engine::power_stats() const {
  return {impl_->power.busy_seconds(), impl_->power.idle_seconds()};
}

void Engine::reset_op_times() {
  if (impl_->diagnostics != nullptr) impl_->diagnostics->reset_op_times();
}

uint64_t Engine::session_bytes(int n_ctx) const {
  return model::sequence_layout(impl_->shape, n_ctx).bytes();
}

std::optional<uint64_t> Engine::free_memory_bytes() const {
  return impl_->backend->free_memory_bytes();
}

double Engine::bytes_per_token() const {
  double b = 0.0;
  for (int il = 0; il < impl_->shape.n_layer; ++il) {
    const int r = impl_->shape.compress_ratio(il);
    if (r == 4) b += 4.0 * (512 + 128) / 4.0;
    if (r == 128) b += 4.0 * 512 / 128.0;
  }
  return b;
}

Result<std::unique_ptr<Session>> Engine::create_session(const SessionOptions& options) {
  if (options.n_ctx < 2 || options.n_ctx > info().n_ctx_max) {
    return Status::invalid_argument("context size %d is outside [2, %d]", options.n_ctx,
                                    info().n_ctx_max);
  }
  if (options.prefill_chunk < 1 || options.prefill_chunk > 65536) {
    return Status::invalid_argument("prefill chunk %d is outside [1, 65536]",
                                    options.prefill_chunk);
  }
  const Steering steering = options.steering.value_or(impl_->options.steering);
  DS4_TRY(check_session_steering(*impl_, steering));
  const int seq = impl_->next_seq++;
  DS4_TRY(
      impl_->backend->create_sequence(seq, model::sequence_layout(impl_->shape, options.n_ctx)));
  impl_->forward->reserve(options.prefill_chunk);
  auto s = std::make_unique<Session::Impl>();
  s->engine = impl_.get();
  s->seq = seq;
  s->logits = NextLogits(impl_->backend.get());
  if (impl_->mtp) {
    const int mtp_seq = impl_->next_seq++;
    const Status made = impl_->backend->create_sequence(
        mtp_seq, model::mtp_sequence_layout(impl_->shape, options.n_ctx));
    if (!made.is_ok()) {
      impl_->backend->drop_sequence(seq);
      return made;
    }
    s->mtp.seq = mtp_seq;
    s->mtp.pending = impl_->backend->alloc(int64_t{impl_->shape.n_hc} * impl_->shape.n_embd);
    s->mtp.live = true;
  }
  s->options = options;
  s->steering = steering;
  s->tail_session = impl_->next_tail_session++;
  if (impl_->tail) impl_->tail->attach(s->tail_session, options);
  return std::make_unique<Session>(std::move(s));
}

}  // namespace ds4
