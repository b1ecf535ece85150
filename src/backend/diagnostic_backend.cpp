// src/backend/diagnostic_backend.cpp: op timing and repeats around a wrapped backend.
#include "backend/diagnostic_backend.h"

#include <charconv>
#include <chrono>
#include <string>

#include "base/check.h"

namespace ds4::backend {
namespace {

constexpr std::string_view kOpNames[DiagnosticBackend::kNumOps] = {
    "embed", "rms_norm", "matmul", "hc_pre", "hc_post", "attention", "moe", "output_head"};

}  // namespace

// Adds the scope's wall time to an op's total when profiling is on, and `calls` issues of the
// op's work to its calls.
class DiagnosticBackend::Timer {
 public:
  Timer(DiagnosticBackend* b, Op op, int calls)
      : b_(b->profiling_ ? b : nullptr), op_(op), calls_(calls) {
    if (b_ != nullptr) t0_ = std::chrono::steady_clock::now();
  }
  ~Timer() {
    if (b_ == nullptr) return;
    const std::chrono::duration<double> d = std::chrono::steady_clock::now() - t0_;
    b_->times_[op_].seconds += d.count();
    b_->times_[op_].calls += calls_;
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

 private:
  DiagnosticBackend* b_;
  Op op_;
  int calls_;
  std::chrono::steady_clock::time_point t0_;
};

DiagnosticBackend::DiagnosticBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {
  DS4_CHECK(inner_ != nullptr);
  Backend::set_numerics(inner_->numerics());
}

void DiagnosticBackend::set_numerics(const Numerics& n) {
  Backend::set_numerics(n);
  inner_->set_numerics(n);
}

std::vector<DiagnosticBackend::OpTime> DiagnosticBackend::op_times() const {
  std::vector<OpTime> out(times_.begin(), times_.end());
  for (int i = 0; i < kNumOps; ++i) out[i].op = kOpNames[i];
  return out;
}

std::optional<DiagnosticBackend::Op> DiagnosticBackend::op_named(std::string_view name) {
  for (int i = 0; i < kNumOps; ++i) {
    if (kOpNames[i] == name) return static_cast<Op>(i);
  }
  return std::nullopt;
}

std::string_view DiagnosticBackend::op_name(Op op) {
  DS4_CHECK(op >= 0 && op < kNumOps);
  return kOpNames[op];
}

Status DiagnosticBackend::set_op_repeat(Op op, int times) {
  if (op < 0 || op >= kNumOps) return Status::invalid_argument("unknown backend op %d", op);
  if (op == kEmbed || op == kAttention) {
    return Status::invalid_argument("%s keeps state and cannot be repeated",
                                    std::string(kOpNames[op]).c_str());
  }
  if (times < 1 || times > 16) {
    return Status::invalid_argument("op repeat %d is outside [1, 16]", times);
  }
  repeat_[op] = times;
  return Status::ok();
}

void DiagnosticBackend::do_embed(const Weight& table, std::span<const RowTag> rows, Act out) {
  const Timer timer(this, kEmbed, 1);
  inner_->do_embed(table, rows, out);
}

void DiagnosticBackend::do_rms_norm(Act x, const Weight* weight, int64_t segment, Act y) {
  const int k = issues(kRmsNorm, y.data != x.data);
  const Timer timer(this, kRmsNorm, k);
  for (int i = 0; i < k; ++i) inner_->do_rms_norm(x, weight, segment, y);
}

Status DiagnosticBackend::set_matmul_filter(std::string_view filter) {
  filter_type_.reset();
  filter_rows_ = 0;
  if (filter.empty()) return Status::ok();
  const size_t colon = filter.find(':');
  const auto type = gguf::type_from_name(filter.substr(0, colon));
  const std::string_view rows = colon == std::string_view::npos ? "" : filter.substr(colon + 1);
  int64_t n = 0;
  const auto [end, err] = std::from_chars(rows.data(), rows.data() + rows.size(), n);
  if (!type || rows.empty() || err != std::errc() || end != rows.data() + rows.size() || n < 1) {
    return Status::invalid_argument(
        "matmul filter '%s': TYPE:ROWS wanted (a GGUF type name and a positive row count)",
        std::string(filter).c_str());
  }
  filter_type_ = *type;
  filter_rows_ = n;
  return Status::ok();
}

bool DiagnosticBackend::repeats(const Weight& w) const {
  return !filter_type_ || (w.type == *filter_type_ && w.ne[1] == filter_rows_);
}

void DiagnosticBackend::do_matmul(const Weight& w, Act x, Act y, int groups) {
  const int k = issues(kMatmul, y.data != x.data && repeats(w));
  const Timer timer(this, kMatmul, k);
  for (int i = 0; i < k; ++i) inner_->do_matmul(w, x, y, groups);
}

// One call of the op (the front checked that no output is x), however many products.
void DiagnosticBackend::do_matmuls(Act x, std::span<const Product> products) {
  bool any = false;
  for (const Product& p : products) any = any || repeats(*p.w);
  const int k = issues(kMatmul, any);
  const Timer timer(this, kMatmul, k);
  for (int i = 0; i < k; ++i) inner_->do_matmuls(x, products);
}

void DiagnosticBackend::sublayer_start() {
  const Timer timer(this, kHcPre, 0);
  inner_->sublayer_start();
}

void DiagnosticBackend::do_hc_pre(const HcWeights& hc, Act x, Act cur, Act mix, const Weight* norm,
                                  Act normed) {
  const int k = issues(kHcPre, x.data != cur.data && x.data != mix.data && x.data != normed.data);
  const Timer timer(this, kHcPre, k);
  for (int i = 0; i < k; ++i) inner_->do_hc_pre(hc, x, cur, mix, norm, normed);
}

void DiagnosticBackend::do_hc_post(Act x, Act f, Act mix, Act y) {
  const int k = issues(kHcPost, y.data != x.data && y.data != f.data && y.data != mix.data);
  const Timer timer(this, kHcPost, k);
  for (int i = 0; i < k; ++i) inner_->do_hc_post(x, f, mix, y);
}

void DiagnosticBackend::do_attention(int il, const AttentionLayer& layer,
                                     std::span<const RowTag> rows, const AttentionInputs& in,
                                     Act out) {
  const Timer timer(this, kAttention, 1);
  inner_->do_attention(il, layer, rows, in, out);
}

void DiagnosticBackend::do_moe(const MoeLayer& layer, std::span<const RowTag> rows, Act n,
                               Act out) {
  const int k = issues(kMoe, out.data != n.data);
  const Timer timer(this, kMoe, k);
  for (int i = 0; i < k; ++i) inner_->do_moe(layer, rows, n, out);
}

void DiagnosticBackend::do_output_head(const OutputHead& head, Act x, std::span<const int> which,
                                       Act logits) {
  const int k = issues(kOutputHead, logits.data != x.data);
  const Timer timer(this, kOutputHead, k);
  for (int i = 0; i < k; ++i) inner_->do_output_head(head, x, which, logits);
}

}  // namespace ds4::backend
