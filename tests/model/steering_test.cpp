// tests/model/steering_test.cpp: directional steering (features.md §8) and the observer's view of
// the sublayers' outputs, on the CPU backend with tiny-f32: the outputs an observer sees are the
// forward's own (the FFN's recomputed in double from the file's weights and the reported expert
// inputs; steering along a row's own output empties exactly that row), steering removes each
// layer's direction from every steered output, zero scales leave every logit as it was, scales
// are per session (a batched step equals each session alone), and bad files and scales are
// refused with the size or range expected.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ds4/engine.h"
#include "ds4/observer.h"
#include "gguf/reader.h"
#include "model_test_util.h"
#include "temp_folder.h"

namespace ds4::test {
namespace {

// model.md §4.10: the SwiGLU limit (gate clamped above, up both ways).
constexpr double kSwigluClamp = 10.0;
// The engine's float sums (n_ff and k terms) against this test's double sums, relative to the
// output's scale.
constexpr double kFfnOutTol = 1e-4;
// What is left of a steered output along its direction, relative to the output's norm: the float
// arithmetic of y - d (d . y) over n_embd terms.
constexpr double kRemovedTol = 1e-5;

// The outputs an observer saw: per (layer, sublayer) the rows of the last report, and the expert
// inputs of each layer's last report.
struct Capture : Observer {
  std::map<std::pair<int, Sublayer>, std::vector<std::vector<float>>> rows;
  std::map<std::pair<int, Sublayer>, std::vector<int32_t>> positions;
  std::map<int, ExpertInputs> experts;
  std::map<int, std::vector<float>> expert_in, expert_weights, down_in;
  std::map<int, std::vector<int32_t>> expert_ids;
  int64_t n_embd = 0;
  std::vector<std::vector<float>>& at(int layer, Sublayer which) { return rows[{layer, which}]; }
  void on_sublayer_outputs(const SublayerOutputs& o) override {
    auto& r = rows[{o.layer, o.sublayer}];
    r.clear();
    n_embd = o.n_embd;
    for (int64_t i = 0; i < o.rows; ++i)
      r.emplace_back(o.values.begin() + i * o.n_embd, o.values.begin() + (i + 1) * o.n_embd);
    positions[{o.layer, o.sublayer}].assign(o.positions.begin(), o.positions.end());
  }
  void on_expert_inputs(const ExpertInputs& x) override {
    experts[x.layer] = x;
    expert_in[x.layer].assign(x.in.begin(), x.in.end());
    expert_weights[x.layer].assign(x.weights.begin(), x.weights.end());
    down_in[x.layer].assign(x.down_in.begin(), x.down_in.end());
    expert_ids[x.layer].assign(x.experts.begin(), x.experts.end());
  }
};

double dot(const float* a, const float* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double{a[i]} * b[i];
  return s;
}

// A direction file of `layers` x `n_embd` floats: unit rows (layer `only`'s alone when >= 0, the
// others zero), from `seed`.
std::vector<float> unit_directions(int layers, int64_t n_embd, uint32_t seed, int only = -1) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g;
  std::vector<float> d(static_cast<size_t>(layers * n_embd), 0.0f);
  for (int il = 0; il < layers; ++il) {
    if (only >= 0 && il != only) continue;
    float* row = d.data() + il * n_embd;
    for (int64_t i = 0; i < n_embd; ++i) row[i] = g(rng);
    const double norm = std::sqrt(dot(row, row, n_embd));
    for (int64_t i = 0; i < n_embd; ++i) row[i] = static_cast<float>(row[i] / norm);
  }
  return d;
}

void write_floats(const std::string& path, const std::vector<float>& v) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(v.data(), sizeof(float), v.size(), f), v.size());
  std::fclose(f);
}

struct Opened {
  std::unique_ptr<Engine> engine;
  Status status;
};
Opened open_steered(const std::string& file, Steering s, Observer* observer = nullptr) {
  EngineOptions o;
  o.model_path = model_path("tiny-f32");
  o.steering_file = file;
  o.steering = s;
  o.observer = observer;
  auto e = Engine::open(o);
  if (!e.is_ok()) return {nullptr, e.status()};
  return {std::move(e).value(), Status::ok()};
}

std::vector<float> prompt_logits(Engine& e, const std::vector<TokenId>& prompt,
                                 std::optional<Steering> s = std::nullopt) {
  auto session = e.create_session({.n_ctx = 128, .prefill_chunk = 64, .steering = s});
  EXPECT_TRUE(session.is_ok()) << session.status().message();
  if (!session.is_ok()) return {};
  EXPECT_TRUE((*session)->append(prompt).is_ok());
  return {(*session)->logits().begin(), (*session)->logits().end()};
}

class SteeringTest : public testing::Test {
 protected:
  void SetUp() override {
    plain_ = open_model("tiny-f32", false);
    ASSERT_NE(plain_, nullptr);
    n_layer_ = plain_->info().n_layer;
    n_embd_ = plain_->info().n_embd;
    file_ = dir_.file("dirs.f32");
    write_floats(file_, unit_directions(n_layer_, n_embd_, 7));
  }
  TempFolder dir_;
  std::unique_ptr<Engine> plain_;
  int n_layer_ = 0;
  int64_t n_embd_ = 0;
  std::string file_;
  const std::vector<TokenId> prompt_ = test_prompt(24, 3);
};

TEST_F(SteeringTest, ZeroScalesLeaveEveryLogitAsItWas) {
  const std::vector<float> want = prompt_logits(*plain_, prompt_);
  Opened e = open_steered(file_, {});
  ASSERT_NE(e.engine, nullptr) << e.status.message();
  EXPECT_TRUE(e.engine->info().steering);
  EXPECT_EQ(prompt_logits(*e.engine, prompt_), want);
  // A steered session beside it changes its own logits only.
  const std::vector<float> steered =
      prompt_logits(*e.engine, prompt_, Steering{.attn = 1, .ffn = 2});
  EXPECT_GT(rel_l2(steered, want), 1e-3);
  EXPECT_EQ(prompt_logits(*e.engine, prompt_, Steering{}), want);
}

TEST_F(SteeringTest, ObserverSeesTheFfnOutputTheWeightsGive) {
  Capture cap;
  Opened e = open_steered("", {}, &cap);
  ASSERT_NE(e.engine, nullptr) << e.status.message();
  EXPECT_EQ(prompt_logits(*e.engine, prompt_), prompt_logits(*plain_, prompt_))
      << "an observer changed the logits";
  const auto file = gguf::Reader::open(model_path("tiny-f32"));
  ASSERT_TRUE(file.is_ok());
  for (int il = 0; il < n_layer_; ++il) {
    SCOPED_TRACE("layer " + std::to_string(il));
    const auto& out = cap.rows[{il, Sublayer::kFfn}];
    ASSERT_EQ(out.size(), prompt_.size());
    ASSERT_EQ(cap.at(il, Sublayer::kAttention).size(), prompt_.size());
    const auto& pos = cap.positions[{il, Sublayer::kFfn}];
    for (size_t r = 0; r < pos.size(); ++r) EXPECT_EQ(pos[r], static_cast<int32_t>(r));
    const ExpertInputs& x = cap.experts[il];
    const std::string p = "blk." + std::to_string(il) + ".";
    const int64_t n_ff = x.n_ff;
    const int64_t n_ff_sh = file->find_tensor(p + "ffn_gate_shexp.weight")->dims[1];
    for (int64_t r = 0; r < x.rows; ++r) {
      std::vector<double> want(static_cast<size_t>(n_embd_), 0.0);
      for (int j = 0; j < x.k; ++j) {  // routed: down . (SwiGLU x weight), as reported
        const int64_t slot = r * x.k + j;
        const float* din = cap.down_in[il].data() + slot * n_ff;
        for (int64_t d = 0; d < n_embd_; ++d) {
          want[static_cast<size_t>(d)] +=
              dot(f32_row(*file, p + "ffn_down_exps.weight", cap.expert_ids[il][size_t(slot)], d),
                  din, n_ff);
        }
      }
      const float* in = cap.expert_in[il].data() + r * n_embd_;  // shared expert
      std::vector<float> h(static_cast<size_t>(n_ff_sh));
      for (int64_t o = 0; o < n_ff_sh; ++o) {
        const double g = std::min(
            dot(f32_row(*file, p + "ffn_gate_shexp.weight", 0, o), in, n_embd_), kSwigluClamp);
        const double u =
            std::clamp(dot(f32_row(*file, p + "ffn_up_shexp.weight", 0, o), in, n_embd_),
                       -kSwigluClamp, kSwigluClamp);
        h[size_t(o)] = static_cast<float>(g / (1.0 + std::exp(-g)) * u);
      }
      double err = 0, norm = 0;
      for (int64_t d = 0; d < n_embd_; ++d) {
        want[size_t(d)] +=
            dot(f32_row(*file, p + "ffn_down_shexp.weight", 0, d), h.data(), n_ff_sh);
        const double got = out[size_t(r)][size_t(d)];
        err += (got - want[size_t(d)]) * (got - want[size_t(d)]);
        norm += want[size_t(d)] * want[size_t(d)];
      }
      EXPECT_LT(std::sqrt(err / norm), kFfnOutTol) << "row " << r;
    }
  }
}

// Steering along one row's own output (scale 1, that layer only) leaves that row nothing of it:
// what the observer reported is the very vector the forward steers, for both sublayers.
TEST_F(SteeringTest, SteeringAlongAReportedRowEmptiesThatRow) {
  Capture seen;
  Opened watch = open_steered("", {}, &seen);
  ASSERT_NE(watch.engine, nullptr);
  prompt_logits(*watch.engine, prompt_);
  const int layer = n_layer_ - 1;
  for (Sublayer which : {Sublayer::kAttention, Sublayer::kFfn}) {
    SCOPED_TRACE(which == Sublayer::kFfn ? "ffn" : "attention");
    const std::vector<float> y = seen.rows[{layer, which}].back();  // the last prompt row
    std::vector<float> dirs(static_cast<size_t>(n_layer_ * n_embd_), 0.0f);
    const double norm = std::sqrt(dot(y.data(), y.data(), n_embd_));
    ASSERT_GT(norm, 0.0);
    for (int64_t i = 0; i < n_embd_; ++i)
      dirs[size_t(layer * n_embd_ + i)] = static_cast<float>(y[size_t(i)] / norm);
    write_floats(file_, dirs);
    Capture steered_seen;
    const Steering s = which == Sublayer::kFfn ? Steering{.ffn = 1} : Steering{.attn = 1};
    Opened e = open_steered(file_, s, &steered_seen);
    ASSERT_NE(e.engine, nullptr) << e.status.message();
    prompt_logits(*e.engine, prompt_);
    const std::vector<float>& got = steered_seen.rows[{layer, which}].back();
    EXPECT_LT(std::sqrt(dot(got.data(), got.data(), n_embd_)) / norm, kRemovedTol);
    // Rows before it kept their part off the direction.
    const std::vector<float>& before = steered_seen.rows[{layer, which}].front();
    const std::vector<float>& was = seen.rows[{layer, which}].front();
    EXPECT_GT(std::sqrt(dot(before.data(), before.data(), n_embd_)),
              0.1 * std::sqrt(dot(was.data(), was.data(), n_embd_)));
  }
}

TEST_F(SteeringTest, ScaleOneRemovesEachLayersDirectionFromEveryOutput) {
  const std::vector<float> dirs = unit_directions(n_layer_, n_embd_, 7);
  Capture cap;
  Opened e = open_steered(file_, {.attn = 1, .ffn = 1}, &cap);
  ASSERT_NE(e.engine, nullptr) << e.status.message();
  prompt_logits(*e.engine, prompt_);
  for (int il = 0; il < n_layer_; ++il) {
    for (Sublayer which : {Sublayer::kAttention, Sublayer::kFfn}) {
      for (const auto& y : cap.rows[{il, which}]) {
        const double along = dot(dirs.data() + il * n_embd_, y.data(), n_embd_);
        EXPECT_LT(std::abs(along) / std::sqrt(dot(y.data(), y.data(), n_embd_)), kRemovedTol)
            << "layer " << il;
      }
    }
  }
  // Scale 2 mirrors the component: d . y' = -(d . y), checked on the last layer's FFN rows
  // against an unsteered run's.
  Capture plain_seen, doubled;
  Opened watch = open_steered("", {}, &plain_seen);
  Opened twice = open_steered(file_, {.ffn = 2}, &doubled);
  ASSERT_TRUE(watch.engine && twice.engine);
  prompt_logits(*watch.engine, prompt_);
  prompt_logits(*twice.engine, prompt_);
  const int il = 0;  // the first layer: its input is the same with and without steering
  const float* d = dirs.data() + il * n_embd_;
  for (size_t r = 0; r < prompt_.size(); ++r) {
    const double a = dot(d, plain_seen.rows[{il, Sublayer::kFfn}][r].data(), n_embd_);
    const double b = dot(d, doubled.rows[{il, Sublayer::kFfn}][r].data(), n_embd_);
    EXPECT_NEAR(b, -a, 1e-5 * (1.0 + std::abs(a))) << "row " << r;
  }
}

TEST_F(SteeringTest, ABatchedStepSteersEachSessionByItsOwnScales) {
  Opened e = open_steered(file_, {});
  ASSERT_NE(e.engine, nullptr);
  const Steering s{.attn = -0.5f, .ffn = 1.5f};
  auto a = e.engine->create_session({.n_ctx = 128, .prefill_chunk = 64, .steering = s});
  auto b = e.engine->create_session({.n_ctx = 128, .prefill_chunk = 64});
  auto a1 = e.engine->create_session({.n_ctx = 128, .prefill_chunk = 64, .steering = s});
  auto b1 = e.engine->create_session({.n_ctx = 128, .prefill_chunk = 64});
  ASSERT_TRUE(a.is_ok() && b.is_ok() && a1.is_ok() && b1.is_ok());
  const std::vector<TokenId> more = test_prompt(5, 9);
  std::vector<StepEntry> step{{.session = a->get(), .tokens = prompt_},
                              {.session = b->get(), .tokens = prompt_}};
  ASSERT_TRUE(e.engine->step(step).is_ok());
  ASSERT_TRUE(step[0].status.is_ok() && step[1].status.is_ok());
  ASSERT_TRUE((*a1)->append(prompt_).is_ok() && (*b1)->append(prompt_).is_ok());
  for (TokenId t : more) {  // decode steps, two sessions a step, against each one alone
    const TokenId one[] = {t};
    std::vector<StepEntry> dec{{.session = a->get(), .tokens = one},
                               {.session = b->get(), .tokens = one}};
    ASSERT_TRUE(e.engine->step(dec).is_ok());
    ASSERT_TRUE((*a1)->eval(t).is_ok() && (*b1)->eval(t).is_ok());
  }
  auto same = [](const Session& x, const Session& y) {
    return std::equal(x.logits().begin(), x.logits().end(), y.logits().begin());
  };
  EXPECT_TRUE(same(**a, **a1)) << "the steered session, batched and alone";
  EXPECT_TRUE(same(**b, **b1)) << "the plain session, batched and alone";
  EXPECT_FALSE(same(**a, **b));
  // The unsteered one is the plain engine's.
  auto p = plain_->create_session({.n_ctx = 128, .prefill_chunk = 64});
  ASSERT_TRUE(p.is_ok() && (*p)->append(prompt_).is_ok());
  for (TokenId t : more) ASSERT_TRUE((*p)->eval(t).is_ok());
  EXPECT_TRUE(same(**b, **p));
  // A session's scales change between passes (the server's per-request override).
  ASSERT_TRUE((*b)->set_steering(s).is_ok());
  EXPECT_EQ((*b)->steering(), s);
}

// A distributed engine's later layers run in other processes with their own flags: a session
// cannot take scales of its own there (the engine's own are fine).
struct UnusedTail : LayerTail {
  Status send(uint64_t, std::span<const TokenId>, std::span<const float>, bool, bool) override {
    return Status::unavailable("unused");
  }
  Result<std::vector<float>> receive(uint64_t) override { return Status::unavailable("unused"); }
  bool holds(uint64_t, size_t) const override { return false; }
};

TEST_F(SteeringTest, ADistributedEngineKeepsTheProcessesScales) {
  EngineOptions o;
  o.model_path = model_path("tiny-f32");
  o.layers = {.first = 0, .last = 2, .output = false};
  o.tail = std::make_shared<UnusedTail>();
  o.steering_file = file_;
  o.steering = {.ffn = 1};
  auto e = Engine::open(o);
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  auto s = (*e)->create_session({.n_ctx = 64, .prefill_chunk = 64});
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  const Status own = (*s)->set_steering({.ffn = 2});
  EXPECT_FALSE(own.is_ok());
  EXPECT_NE(own.message().find("distributed"), std::string::npos) << own.message();
  EXPECT_TRUE((*s)->set_steering({.ffn = 1}).is_ok());
  EXPECT_FALSE(
      (*e)->create_session({.n_ctx = 64, .prefill_chunk = 64, .steering = Steering{}}).is_ok());
}

TEST_F(SteeringTest, BadFilesAndScalesAreRefused) {
  const size_t want = static_cast<size_t>(n_layer_ * n_embd_) * sizeof(float);
  write_floats(file_, std::vector<float>(static_cast<size_t>(n_layer_ * n_embd_ - 1), 0.0f));
  Opened short_file = open_steered(file_, {.ffn = 1});
  ASSERT_EQ(short_file.engine, nullptr);
  EXPECT_NE(short_file.status.message().find("needs exactly " + std::to_string(want)),
            std::string::npos)
      << short_file.status.message();
  std::vector<float> nan_row(static_cast<size_t>(n_layer_ * n_embd_), 0.0f);
  nan_row[static_cast<size_t>(n_embd_ + 3)] = NAN;
  write_floats(file_, nan_row);
  Opened nan_file = open_steered(file_, {.ffn = 1});
  ASSERT_EQ(nan_file.engine, nullptr);
  EXPECT_NE(nan_file.status.message().find("layer 1"), std::string::npos);
  Opened missing = open_steered(dir_.file("absent.f32"), {.ffn = 1});
  EXPECT_EQ(missing.engine, nullptr);

  Opened no_file = open_steered("", {.ffn = 1});
  ASSERT_EQ(no_file.engine, nullptr);
  EXPECT_NE(no_file.status.message().find("needs a direction file"), std::string::npos);
  Opened too_big = open_steered("", {.attn = 101});
  ASSERT_EQ(too_big.engine, nullptr);
  EXPECT_NE(too_big.status.message().find("outside [-100, 100]"), std::string::npos);

  auto s = plain_->create_session({.n_ctx = 64, .prefill_chunk = 64});
  ASSERT_TRUE(s.is_ok());
  EXPECT_FALSE((*s)->set_steering({.ffn = 0.5f}).is_ok()) << "a scale without a file";
  EXPECT_TRUE((*s)->set_steering({}).is_ok());
  EXPECT_FALSE(
      plain_->create_session({.n_ctx = 64, .prefill_chunk = 64, .steering = Steering{.attn = 1}})
          .is_ok());
  write_floats(file_, unit_directions(n_layer_, n_embd_, 1));
  Opened ok = open_steered(file_, {});
  ASSERT_NE(ok.engine, nullptr);
  auto t = ok.engine->create_session({.n_ctx = 64, .prefill_chunk = 64});
  ASSERT_TRUE(t.is_ok());
  EXPECT_FALSE((*t)->set_steering({.ffn = NAN}).is_ok());
  EXPECT_FALSE((*t)->set_steering({.ffn = -100.5f}).is_ok());
  EXPECT_TRUE((*t)->set_steering({.attn = -100, .ffn = 100}).is_ok());
}

}  // namespace
}  // namespace ds4::test
