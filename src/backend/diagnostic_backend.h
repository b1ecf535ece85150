// src/backend/diagnostic_backend.h: a backend that wraps another and forwards every op to it,
// for diagnostics: the wall time spent in each op, and an op's work issued several times per call.
// The engine puts one in front of its backend only when EngineOptions asks for op timing or an op
// repeat (ds4-bench --op-times, --repeat-op); the validated front (backend.h) and the backends
// know nothing of it. Its own front checks each call, then it calls the wrapped backend's
// implementation directly.
// Owns: the wrapped backend, the per-op times and repeats.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "backend/backend.h"

namespace ds4::backend {

class DiagnosticBackend final : public Backend {
 public:
  enum Op { kEmbed, kRmsNorm, kMatmul, kHcPre, kHcPost, kAttention, kMoe, kOutputHead, kNumOps };
  struct OpTime {
    std::string_view op;
    double seconds = 0.0;
    int64_t calls = 0;
  };

  // Takes the wrapped backend's numerics as its own.
  explicit DiagnosticBackend(std::unique_ptr<Backend> inner);

  // Wall time per op (off by default).
  void set_profiling(bool on) { profiling_ = on; }
  // One entry per op, in Op order; each issue of an op's work (set_op_repeat) counts as a call.
  std::vector<OpTime> op_times() const;
  void reset_op_times() { times_ = {}; }
  // Each call of `op` issues its work `times` times (1 to 16), the extra issues recomputing the
  // same outputs from the same inputs, so that a step's time with an op repeated, less its time
  // without, is what the op costs where it runs, beside its neighbours (a profiler times kernels
  // one at a time). Ops that keep state repeat nothing: embed and attention (it appends to the
  // cache) are refused, and a call whose output is one of its inputs (an in-place rms_norm) runs
  // once.
  Status set_op_repeat(Op op, int times);
  // With a repeated matmul: only the products of one weight type and row count are repeated,
  // "TYPE:ROWS" (a GGUF type name and the weight's output rows, e.g. "q8_0:4096"; a call of
  // several products of one input is repeated when one of them matches), so that a product's
  // own cost in place can be told from the others'. Empty: every product.
  Status set_matmul_filter(std::string_view filter);
  // The op of an op_times name ("hc_pre", ...), or nullopt; and the name of an op.
  static std::optional<Op> op_named(std::string_view name);
  static std::string_view op_name(Op op);

  std::string_view name() const override { return inner_->name(); }
  Result<Weight> upload(const Weight& host) override { return inner_->upload(host); }
  std::unique_ptr<Buffer> alloc(int64_t n_floats) override { return inner_->alloc(n_floats); }
  Status create_sequence(int seq, const SequenceLayout& layout) override {
    return inner_->create_sequence(seq, layout);
  }
  void drop_sequence(int seq) override { inner_->drop_sequence(seq); }
  void reset_sequence(int seq) override { inner_->reset_sequence(seq); }
  Result<std::vector<LayerState>> export_sequence(int seq) const override {
    return inner_->export_sequence(seq);
  }
  Status import_sequence(int seq, const std::vector<LayerState>& state) override {
    return inner_->import_sequence(seq, state);
  }
  Status export_sequence_into(int seq, std::span<uint8_t> out,
                              const std::function<void(size_t)>& done) const override {
    return inner_->export_sequence_into(seq, out, done);
  }
  Status import_sequence_view(int seq, std::span<const LayerStateView> state) override {
    return inner_->import_sequence_view(seq, state);
  }
  Status mark_sequence(int seq) override { return inner_->mark_sequence(seq); }
  Status rewind_sequence(int seq, int n_tokens) override {
    return inner_->rewind_sequence(seq, n_tokens);
  }
  void settle_sequence(int seq) override { inner_->settle_sequence(seq); }
  std::optional<uint64_t> free_memory_bytes() const override { return inner_->free_memory_bytes(); }
  bool picks_tokens() const override { return inner_->picks_tokens(); }
  void pick_tokens(std::span<const PickRow> rows, std::span<Picked> out) override {
    inner_->pick_tokens(rows, out);
  }
  Status set_observer(Observer* observer) override { return inner_->set_observer(observer); }
  void begin_step(std::span<const RowTag> rows) override { inner_->begin_step(rows); }
  void end_step() override { inner_->end_step(); }
  void wait_idle() override { inner_->wait_idle(); }
  void set_numerics(const Numerics& n) override;

 protected:
  void do_embed(const Weight& table, std::span<const RowTag> rows, Act out) override;
  void do_rms_norm(Act x, const Weight* weight, int64_t segment, Act y) override;
  void do_matmul(const Weight& w, Act x, Act y, int groups) override;
  void do_matmuls(Act x, std::span<const Product> products) override;
  void do_hc_pre(const HcWeights& hc, Act x, Act cur, Act mix, const Weight* norm,
                 Act normed) override;
  void do_hc_post(Act x, Act f, Act mix, Act y) override;
  void do_attention(int il, const AttentionLayer& layer, std::span<const RowTag> rows,
                    const AttentionInputs& in, Act out) override;
  void do_moe(const MoeLayer& layer, std::span<const RowTag> rows, Act n, Act out) override;
  void do_output_head(const OutputHead& head, Act x, std::span<const int> which,
                      Act logits) override;
  void do_download(Act src, float* host) override { inner_->do_download(src, host); }
  void do_upload_act(const float* host, Act dst) override { inner_->do_upload_act(host, dst); }
  void do_add(Act a, Act b, Act y) override { inner_->do_add(a, b, y); }
  void do_steer(const Weight& direction, std::span<const RowTag> rows, Sublayer which,
                Act y) override {
    inner_->do_steer(direction, rows, which, y);
  }
  void do_report_sublayer(int layer, Sublayer which, std::span<const RowTag> rows, Act y) override {
    inner_->do_report_sublayer(layer, which, rows, y);
  }
  void do_copy(Act src, Act dst) override { inner_->do_copy(src, dst); }
  // Timed with hc_pre (the op that starts a sublayer), not counted as a call.
  void sublayer_start() override;

 private:
  class Timer;
  // How many times a call of `op` issues its work: its repeat when `repeatable`, else 1.
  int issues(Op op, bool repeatable) const { return repeatable ? repeat_[op] : 1; }
  // Whether the matmul filter lets a product of w be repeated.
  bool repeats(const Weight& w) const;

  std::unique_ptr<Backend> inner_;
  bool profiling_ = false;
  std::array<OpTime, kNumOps> times_{};
  std::array<int, kNumOps> repeat_ = [] {
    std::array<int, kNumOps> r{};
    r.fill(1);
    return r;
  }();
  std::optional<gguf::GgufType> filter_type_;  // set_matmul_filter; none: every product
  int64_t filter_rows_ = 0;
};

}  // namespace ds4::backend
