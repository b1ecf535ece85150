// tests/model/observer_test.cpp: engine observers (ds4/observer.h) on the CPU backend, tiny-f32:
// a prefill reports each layer's MoE once with every row; each slot's down-projection input is
// SwiGLU(gate . x, up . x) x its routing weight, recomputed here in double from the file's own F32
// expert weights; each row's experts are distinct and in range; watching changes no logit.
#include "ds4/observer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "model_test_util.h"

namespace ds4::test {
namespace {

// model.md §4.10: the SwiGLU limit (gate clamped above, up both ways).
constexpr double kSwigluClamp = 10.0;
// The engine's float dot products against this test's double sums over 128-512 terms.
constexpr double kDownInTol = 1e-4;

struct Recorder : Observer {
  struct Call {
    ExpertInputs view;
    std::vector<float> in, weights, down_in;
    std::vector<int32_t> experts;
  };
  std::vector<Call> calls;
  void on_expert_inputs(const ExpertInputs& x) override {
    Call c{x,
           {x.in.begin(), x.in.end()},
           {x.weights.begin(), x.weights.end()},
           {x.down_in.begin(), x.down_in.end()},
           {x.experts.begin(), x.experts.end()}};
    calls.push_back(std::move(c));
  }
};

TEST(Observer, SeesWhatReachesTheRoutedExperts) {
  Recorder rec;
  EngineOptions o;
  o.model_path = model_path("tiny-f32");
  o.observer = &rec;
  auto e = Engine::open(o);
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  auto plain = open_model("tiny-f32", false);
  const std::vector<TokenId> prompt = test_prompt(20, 5);
  auto s = (*e)->create_session({.n_ctx = 128, .prefill_chunk = 64});
  auto p = plain->create_session({.n_ctx = 128, .prefill_chunk = 64});
  ASSERT_TRUE(s.is_ok() && p.is_ok());
  ASSERT_TRUE((*s)->append(prompt).is_ok() && (*p)->append(prompt).is_ok());
  EXPECT_TRUE(std::equal((*s)->logits().begin(), (*s)->logits().end(), (*p)->logits().begin()))
      << "an observer changed the logits";

  const int n_layer = (*e)->info().n_layer;
  ASSERT_EQ(static_cast<int>(rec.calls.size()), n_layer);
  const auto file = gguf::Reader::open(model_path("tiny-f32"));
  ASSERT_TRUE(file.is_ok());
  for (int il = 0; il < n_layer; ++il) {
    const Recorder::Call& c = rec.calls[static_cast<size_t>(il)];
    SCOPED_TRACE("layer " + std::to_string(il));
    EXPECT_EQ(c.view.layer, il);
    ASSERT_EQ(c.view.rows, static_cast<int64_t>(prompt.size()));
    ASSERT_EQ(c.in.size(), static_cast<size_t>(c.view.rows * c.view.n_embd));
    ASSERT_EQ(c.experts.size(), static_cast<size_t>(c.view.rows * c.view.k));
    ASSERT_EQ(c.down_in.size(), c.experts.size() * static_cast<size_t>(c.view.n_ff));
    const std::string p_ = "blk." + std::to_string(il) + ".";
    for (int64_t r = 0; r < c.view.rows; ++r) {
      std::set<int32_t> seen;
      for (int j = 0; j < c.view.k; ++j) {
        const int64_t slot = r * c.view.k + j;
        const int32_t ex = c.experts[static_cast<size_t>(slot)];
        ASSERT_GE(ex, 0);
        ASSERT_LT(ex,
                  static_cast<int32_t>(file->find_tensor(p_ + "ffn_gate_exps.weight")->dims[2]));
        EXPECT_TRUE(seen.insert(ex).second) << "expert " << ex << " twice in row " << r;
        double worst = 0;
        for (int64_t out = 0; out < c.view.n_ff; ++out) {
          const float* g = f32_row(*file, p_ + "ffn_gate_exps.weight", ex, out);
          const float* u = f32_row(*file, p_ + "ffn_up_exps.weight", ex, out);
          double gd = 0, ud = 0;
          for (int64_t i = 0; i < c.view.n_embd; ++i) {
            const double x = c.in[static_cast<size_t>(r * c.view.n_embd + i)];
            gd += g[i] * x;
            ud += u[i] * x;
          }
          gd = std::min(gd, kSwigluClamp);
          ud = std::clamp(ud, -kSwigluClamp, kSwigluClamp);
          const double want =
              gd / (1.0 + std::exp(-gd)) * ud * c.weights[static_cast<size_t>(slot)];
          const double got = c.down_in[static_cast<size_t>(slot * c.view.n_ff + out)];
          worst = std::max(worst, std::abs(got - want) / std::max(1.0, std::abs(want)));
        }
        EXPECT_LT(worst, kDownInTol) << "row " << r << " slot " << j;
      }
    }
  }
}

}  // namespace
}  // namespace ds4::test
