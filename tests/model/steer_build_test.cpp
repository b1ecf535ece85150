// tests/model/steer_build_test.cpp: `ds4-steer build` (tools/steer, features.md §8.3) on tiny-f32:
// the direction arithmetic on hand-made rows, and the whole build -- a unit direction per layer,
// orthogonal to the contrast prompts' mean output with the default option, its metadata -- whose
// file, applied at FFN scale 1, leaves no FFN output of any layer a component along its
// direction (seen through the observer); bad prompt files are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ds4/engine.h"
#include "model_test_util.h"
#include "temp_folder.h"
#include "tools/steer/directions.h"

namespace ds4::test {
namespace {

// A built row's norm against 1 (float rounding of a double-normalised vector).
constexpr double kUnitTol = 1e-5;
// A steered output's component along its direction, relative to the output's norm.
constexpr double kRemovedTol = 1e-5;

double dot(const float* a, const float* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double{a[i]} * b[i];
  return s;
}

TEST(SteerDirections, MeansDifferenceOrthogonalisedAndNormalised) {
  // One layer of 2 values; good rows (3,1) and (5,1), bad rows (1,1) and (1,3).
  const std::vector<std::vector<float>> good = {{3, 1}, {5, 1}}, bad = {{1, 1}, {1, 3}};
  // mean(good) - mean(bad) = (3, -1): normalised (3, -1) / sqrt(10).
  std::vector<float> d = steer::directions(good, bad, 1, 2, false, false);
  EXPECT_NEAR(d[0], 3 / std::sqrt(10.0), 1e-7);
  EXPECT_NEAR(d[1], -1 / std::sqrt(10.0), 1e-7);
  // Orthogonalised against mean(bad) = (1, 2): (3,-1) - ((3-2)/5)(1,2) = (2.8, -1.4), normalised.
  d = steer::directions(good, bad, 1, 2, false, true);
  EXPECT_NEAR(d[0], 2.8 / std::hypot(2.8, 1.4), 1e-7);
  EXPECT_NEAR(d[1], -1.4 / std::hypot(2.8, 1.4), 1e-7);
  // Pair-normalised: pairs (2,0) -> (1,0) and (4,-2) -> (2,-1)/sqrt(5); their mean, normalised.
  d = steer::directions(good, bad, 1, 2, true, false);
  const double x = (1 + 2 / std::sqrt(5.0)) / 2, y = (-1 / std::sqrt(5.0)) / 2;
  EXPECT_NEAR(d[0], x / std::hypot(x, y), 1e-7);
  EXPECT_NEAR(d[1], y / std::hypot(x, y), 1e-7);
  // Equal sets: no direction (zeros, not NaN).
  d = steer::directions(good, good, 1, 2, false, true);
  EXPECT_EQ(d, (std::vector<float>{0, 0}));
}

// Captures every FFN output row of each layer.
struct FfnRows : Observer {
  std::map<int, std::vector<std::vector<float>>> rows;
  void on_sublayer_outputs(const SublayerOutputs& o) override {
    if (o.sublayer != Sublayer::kFfn) return;
    for (int64_t r = 0; r < o.rows; ++r)
      rows[o.layer].emplace_back(o.values.begin() + r * o.n_embd,
                                 o.values.begin() + (r + 1) * o.n_embd);
  }
};

TEST(SteerBuild, BuildsUnitDirectionsThatSteeringRemoves) {
  TempFolder dir;
  {
    std::ofstream g(dir.file("good.txt")), b(dir.file("bad.txt"));
    g << "# target prompts\nAnswer in one word.\nBe brief.\n\nShort answers only.\n";
    b << "Explain at great length, with many examples.\nWrite a long essay.\nTell me more, in "
         "detail.\nAn extra line the shorter list cuts.\n";
  }
  steer::BuildReport report;
  const steer::BuildOptions o{.model = model_path("tiny-f32"),
                              .good_file = dir.file("good.txt"),
                              .bad_file = dir.file("bad.txt"),
                              .output = dir.file("brief.f32"),
                              .ctx = 128,
                              .threads = 2};
  const Status st = steer::build(o, &report);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(report.pairs, 3);
  const int n_layer = report.n_layer;
  const int64_t n_embd = report.n_embd;
  ASSERT_EQ(std::filesystem::file_size(o.output), size_t(n_layer * n_embd) * sizeof(float));
  std::vector<float> dirs(static_cast<size_t>(n_layer * n_embd));
  std::ifstream(o.output, std::ios::binary)
      .read(reinterpret_cast<char*>(dirs.data()), std::streamsize(dirs.size() * sizeof(float)));
  for (int il = 0; il < n_layer; ++il) {
    const float* d = dirs.data() + il * n_embd;
    EXPECT_NEAR(std::sqrt(dot(d, d, n_embd)), 1.0, kUnitTol) << "layer " << il;
  }
  const nlohmann::json meta = nlohmann::json::parse(std::ifstream(report.metadata_path));
  EXPECT_EQ(meta["format"], "ds4-directional-steering-v1");
  EXPECT_EQ(meta["shape"], nlohmann::json({n_layer, n_embd}));
  EXPECT_EQ(meta["component"], "ffn_out");
  EXPECT_EQ(meta["orthogonalize_control_mean"], true);
  EXPECT_EQ(meta["pairs"], 3);

  // Applied at FFN scale 1: every FFN output of every layer keeps nothing along its direction.
  FfnRows seen;
  EngineOptions eo;
  eo.model_path = o.model;
  eo.steering_file = o.output;
  eo.steering = {.ffn = 1};
  eo.observer = &seen;
  auto e = Engine::open(eo);
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  auto s = (*e)->create_session({.n_ctx = 128, .prefill_chunk = 64});
  ASSERT_TRUE(s.is_ok() && (*s)->append(test_prompt(30, 8)).is_ok());
  ASSERT_EQ(static_cast<int>(seen.rows.size()), n_layer);
  for (const auto& [il, rows] : seen.rows) {
    for (const auto& y : rows) {
      const double along = dot(dirs.data() + il * n_embd, y.data(), n_embd);
      EXPECT_LT(std::abs(along) / std::sqrt(dot(y.data(), y.data(), n_embd)), kRemovedTol)
          << "layer " << il;
    }
  }
}

TEST(SteerBuild, BadPromptFilesAreRefused) {
  TempFolder dir;
  {
    std::ofstream(dir.file("empty.txt")) << "# only a comment\n\n   \n";
    std::ofstream(dir.file("ok.txt")) << "Hello\n";
    std::ofstream long_prompt(dir.file("long.txt"));
    for (int i = 0; i < 200; ++i) long_prompt << "word ";
    long_prompt << "\n";
  }
  steer::BuildOptions o{.model = model_path("tiny-f32"),
                        .good_file = dir.file("empty.txt"),
                        .bad_file = dir.file("ok.txt"),
                        .output = dir.file("x.f32"),
                        .ctx = 64};
  Status st = steer::build(o);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("holds no prompt"), std::string::npos) << st.message();
  o.good_file = dir.file("long.txt");
  st = steer::build(o);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("more than --ctx 64"), std::string::npos) << st.message();
  o.good_file = dir.file("absent.txt");
  EXPECT_FALSE(steer::build(o).is_ok());
  EXPECT_FALSE(std::filesystem::exists(o.output));
}

}  // namespace
}  // namespace ds4::test
