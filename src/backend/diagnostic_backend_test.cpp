// src/backend/diagnostic_backend_test.cpp: the op-diagnostics wrapper forwards every call to the
// backend it wraps, once per call unless an op is repeated, and counts each issue of an op's work:
// repeats multiply an op's issues, in-place calls and stateful ops are issued once, a sublayer
// starts once per hc_pre, and numerics reach the wrapped backend.
#include "backend/diagnostic_backend.h"

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <string>
#include <vector>

#include "backend/host_buffer.h"

namespace ds4::backend {
namespace {

// Counts the calls of each implementation; computes nothing.
class CountingBackend final : public Backend {
 public:
  explicit CountingBackend(std::map<std::string, int>* calls) : calls_(calls) {}
  std::string_view name() const override { return "counting"; }
  Result<Weight> upload(const Weight& host) override { return host; }
  std::unique_ptr<Buffer> alloc(int64_t n) override { return std::make_unique<HostBuffer>(n); }
  Status create_sequence(int, const SequenceLayout&) override { return Status::ok(); }
  void drop_sequence(int) override {}
  void reset_sequence(int) override {}
  Result<std::vector<LayerState>> export_sequence(int) const override {
    return std::vector<LayerState>{};
  }
  Status import_sequence(int, const std::vector<LayerState>&) override { return Status::ok(); }
  void begin_step(std::span<const RowTag>) override { ++(*calls_)["begin_step"]; }
  void end_step() override { ++(*calls_)["end_step"]; }

 protected:
  void do_embed(const Weight&, std::span<const RowTag>, Act) override { ++(*calls_)["embed"]; }
  void do_rms_norm(Act, const Weight*, int64_t, Act) override { ++(*calls_)["rms_norm"]; }
  void do_matmul(const Weight&, Act, Act, int) override { ++(*calls_)["matmul"]; }
  void do_matmuls(Act, std::span<const Product>) override { ++(*calls_)["matmuls"]; }
  void do_hc_pre(const HcWeights&, Act, Act, Act, const Weight*, Act) override {
    ++(*calls_)["hc_pre"];
  }
  void do_hc_post(Act, Act, Act, Act) override { ++(*calls_)["hc_post"]; }
  void do_add(Act, Act, Act) override { ++(*calls_)["add"]; }
  void do_copy(Act, Act) override { ++(*calls_)["copy"]; }
  void do_steer(const Weight&, std::span<const RowTag>, Sublayer, Act) override {
    ++(*calls_)["steer"];
  }
  void do_attention(int, const AttentionLayer&, std::span<const RowTag>, const AttentionInputs&,
                    Act) override {
    ++(*calls_)["attention"];
  }
  void do_moe(const MoeLayer&, std::span<const RowTag>, Act, Act) override { ++(*calls_)["moe"]; }
  void do_output_head(const OutputHead&, Act, std::span<const int>, Act) override {
    ++(*calls_)["output_head"];
  }
  void do_download(Act, float*) override { ++(*calls_)["download"]; }
  void do_upload_act(const float*, Act) override { ++(*calls_)["upload_act"]; }
  void sublayer_start() override { ++(*calls_)["sublayer_start"]; }

 private:
  std::map<std::string, int>* calls_;
};

int64_t calls_of(const DiagnosticBackend& d, DiagnosticBackend::Op op) {
  return d.op_times()[op].calls;
}

TEST(DiagnosticBackend, ForwardsAndCountsEachIssueOfAnOp) {
  std::map<std::string, int> calls;
  DiagnosticBackend d(std::make_unique<CountingBackend>(&calls));
  EXPECT_EQ(d.name(), "counting");
  d.set_profiling(true);
  ASSERT_TRUE(d.set_op_repeat(DiagnosticBackend::kMatmul, 3).is_ok());
  ASSERT_TRUE(d.set_op_repeat(DiagnosticBackend::kRmsNorm, 2).is_ok());

  std::vector<float> a(16), b(16), c(16), w(16, 1.0f);
  const Act x{a.data(), 2, 8}, y{b.data(), 2, 8}, z{c.data(), 2, 8};
  const Weight wm{.data = w.data(), .type = gguf::GgufType::kF32, .ne = {8, 8, 1}};
  d.matmul(wm, x, y);
  const std::array<Backend::Product, 2> products{Backend::Product{&wm, y}, {&wm, z}};
  d.matmuls(x, products);
  d.rms_norm(x, nullptr, 8, y);  // out of place: repeated
  d.rms_norm(x, nullptr, 8, x);  // in place: once
  EXPECT_EQ(calls["matmul"], 3);
  EXPECT_EQ(calls["matmuls"], 3);  // one call of the op, its products together
  EXPECT_EQ(calls["rms_norm"], 3);
  EXPECT_EQ(calls_of(d, DiagnosticBackend::kMatmul), 6);
  EXPECT_EQ(calls_of(d, DiagnosticBackend::kRmsNorm), 3);

  // hc_pre: the wrapped backend's sublayer starts once, its work once (not repeated).
  std::vector<float> cur(8), mix(16);
  HcWeights hc;
  hc.fn = Weight{.data = w.data(), .type = gguf::GgufType::kF32, .ne = {8, 8, 1}};
  hc.scale = Weight{.data = w.data(), .type = gguf::GgufType::kF32, .ne = {3, 1, 1}};
  hc.base = Weight{.data = w.data(), .type = gguf::GgufType::kF32, .ne = {8, 1, 1}};
  d.hc_pre(hc, x, Act{cur.data(), 2, 4}, Act{mix.data(), 2, 8});
  EXPECT_EQ(calls["sublayer_start"], 1);
  EXPECT_EQ(calls["hc_pre"], 1);
  EXPECT_EQ(calls_of(d, DiagnosticBackend::kHcPre), 1);

  const std::array<RowTag, 1> rows{RowTag{.seq = 0, .pos = 0, .token = 0}};
  d.begin_step(rows);
  d.end_step();
  float host[16];
  d.download(x, host);
  EXPECT_EQ(calls["begin_step"], 1);
  EXPECT_EQ(calls["end_step"], 1);
  EXPECT_EQ(calls["download"], 1);

  d.reset_op_times();
  EXPECT_EQ(calls_of(d, DiagnosticBackend::kMatmul), 0);
}

TEST(DiagnosticBackend, StatefulOpsAndBadCountsAreRefused) {
  std::map<std::string, int> calls;
  DiagnosticBackend d(std::make_unique<CountingBackend>(&calls));
  EXPECT_FALSE(d.set_op_repeat(DiagnosticBackend::kEmbed, 2).is_ok());
  EXPECT_FALSE(d.set_op_repeat(DiagnosticBackend::kAttention, 2).is_ok());
  EXPECT_FALSE(d.set_op_repeat(DiagnosticBackend::kMoe, 0).is_ok());
  EXPECT_FALSE(d.set_op_repeat(DiagnosticBackend::kMoe, 17).is_ok());
  EXPECT_TRUE(d.set_op_repeat(DiagnosticBackend::kMoe, 16).is_ok());
  EXPECT_EQ(DiagnosticBackend::op_named("hc_post"), DiagnosticBackend::kHcPost);
  EXPECT_EQ(DiagnosticBackend::op_named("softmax"), std::nullopt);
  EXPECT_EQ(DiagnosticBackend::op_name(DiagnosticBackend::kOutputHead), "output_head");
  // Without profiling nothing is counted.
  std::vector<float> a(8), b(8);
  d.rms_norm(Act{a.data(), 1, 8}, nullptr, 8, Act{b.data(), 1, 8});
  EXPECT_EQ(calls["rms_norm"], 1);
  EXPECT_EQ(calls_of(d, DiagnosticBackend::kRmsNorm), 0);
}

TEST(DiagnosticBackend, AMatmulFilterRepeatsOnlyTheProductsOfItsTypeAndRows) {
  std::map<std::string, int> calls;
  DiagnosticBackend d(std::make_unique<CountingBackend>(&calls));
  ASSERT_TRUE(d.set_op_repeat(DiagnosticBackend::kMatmul, 2).is_ok());
  ASSERT_TRUE(d.set_matmul_filter("q8_0:16").is_ok());
  std::vector<float> a(32), b(32), c(32), w(8 * 16, 1.0f);
  const Act x{a.data(), 2, 8}, y{b.data(), 2, 16}, z{c.data(), 2, 8};
  const Weight q16{.data = w.data(), .type = gguf::GgufType::kQ8_0, .ne = {8, 16, 1}};
  const Weight q8{.data = w.data(), .type = gguf::GgufType::kQ8_0, .ne = {8, 8, 1}};
  const Weight f16{.data = w.data(), .type = gguf::GgufType::kF16, .ne = {8, 16, 1}};
  d.matmul(q16, x, y);  // matches: twice
  EXPECT_EQ(calls["matmul"], 2);
  d.matmul(q8, x, z);   // other rows: once
  d.matmul(f16, x, y);  // other type: once
  EXPECT_EQ(calls["matmul"], 4);
  const std::array<Backend::Product, 2> one_matches{Backend::Product{&q8, z}, {&q16, y}};
  d.matmuls(x, one_matches);
  EXPECT_EQ(calls["matmuls"], 2);
  const std::array<Backend::Product, 1> none_matches{Backend::Product{&f16, y}};
  d.matmuls(x, none_matches);
  EXPECT_EQ(calls["matmuls"], 3);
  ASSERT_TRUE(d.set_matmul_filter("").is_ok());  // every product again
  d.matmul(q8, x, z);
  EXPECT_EQ(calls["matmul"], 6);
  for (const char* bad : {"q8_0", "q9_0:16", "q8_0:", "q8_0:0", "q8_0:16x", "q8_0:-3"})
    EXPECT_FALSE(d.set_matmul_filter(bad).is_ok()) << bad;
}

TEST(DiagnosticBackend, NumericsReachTheWrappedBackend) {
  std::map<std::string, int> calls;
  auto inner = std::make_unique<CountingBackend>(&calls);
  Backend* wrapped = inner.get();
  inner->set_numerics({.qat_simulation = false, .f16_rows = true});
  DiagnosticBackend d(std::move(inner));
  EXPECT_FALSE(d.numerics().qat_simulation);  // taken from the wrapped backend
  d.set_numerics({.qat_simulation = true, .f16_rows = false});
  EXPECT_TRUE(wrapped->numerics().qat_simulation);
  EXPECT_FALSE(wrapped->numerics().f16_rows);
}

}  // namespace
}  // namespace ds4::backend
