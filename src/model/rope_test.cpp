// Protects: RoPE/YaRN angles against transformers' DeepseekV4RotaryEmbedding (the reference that
// semantics-diff §C.2 names), recorded by tools/reference/rope_vectors.py into
// tests/data/reference/rope.json: inv_freq tables bit for bit, cos/sin at positions up to
// 1,048,575 within a few float32 ulps (libm vs torch trigonometry), and rotation properties.
#include "model/rope.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

namespace ds4::model {
namespace {

nlohmann::json load() {
  const char* src = std::getenv("DS4_SOURCE_DIR");
  if (src == nullptr) return {};
  std::ifstream f(std::string(src) + "/tests/data/reference/rope.json");
  return f ? nlohmann::json::parse(f) : nlohmann::json();
}

float from_bits(uint32_t b) { return std::bit_cast<float>(b); }

TEST(Rope, InvFreqTablesEqualTheReferenceBitForBit) {
  const auto j = load();
  if (j.is_null()) GTEST_SKIP() << "run through ctest (DS4_SOURCE_DIR)";
  for (const char* kind : {"main", "compress"}) {
    const RopeTable t = rope_table(std::string(kind) == "compress");
    const auto want = j["types"][kind]["inv_freq_bits"].get<std::vector<uint32_t>>();
    ASSERT_EQ(want.size(), static_cast<size_t>(kRopePairs));
    for (int p = 0; p < kRopePairs; ++p) {
      EXPECT_EQ(std::bit_cast<uint32_t>(t.inv_freq[p]), want[p])
          << kind << " pair " << p << ": " << t.inv_freq[p] << " vs " << from_bits(want[p]);
    }
    EXPECT_EQ(j["types"][kind]["attention_scaling"].get<double>(), 1.0)
        << kind;  // no YaRN magnitude
  }
}

TEST(Rope, CosSinMatchTheReferenceAtAllRecordedPositions) {
  const auto j = load();
  if (j.is_null()) GTEST_SKIP() << "run through ctest (DS4_SOURCE_DIR)";
  const auto positions = j["positions"].get<std::vector<int64_t>>();
  // Tolerance: both sides take cos/sin of the same float32 angle; float32 math libraries differ by
  // at most a couple of ulps (about 1.2e-7 each near 1).
  constexpr float kTrigTol = 4e-7f;
  for (const char* kind : {"main", "compress"}) {
    const RopeTable t = rope_table(std::string(kind) == "compress");
    const auto c = j["types"][kind]["cos_bits"].get<std::vector<uint32_t>>();
    const auto s = j["types"][kind]["sin_bits"].get<std::vector<uint32_t>>();
    ASSERT_EQ(c.size(), positions.size() * kRopePairs);
    for (size_t i = 0; i < positions.size(); ++i) {
      std::array<float, kRopePairs> cs{}, sn{};
      rope_cos_sin(t, positions[i], cs, sn);
      for (int p = 0; p < kRopePairs; ++p) {
        EXPECT_NEAR(cs[p], from_bits(c[i * kRopePairs + p]), kTrigTol)
            << kind << " pos " << positions[i] << " p " << p;
        EXPECT_NEAR(sn[p], from_bits(s[i * kRopePairs + p]), kTrigTol)
            << kind << " pos " << positions[i] << " p " << p;
      }
    }
  }
}

TEST(Rope, YarnOnlyChangesTheLowFrequencyPairs) {
  const RopeTable y = rope_table(true);
  for (int p = 0; p <= 15; ++p)
    EXPECT_EQ(y.inv_freq[p], 1.0f / static_cast<float>(std::pow(160000.0, p / 32.0))) << p;
  for (int p = 25; p < kRopePairs; ++p) {
    EXPECT_NEAR(y.inv_freq[p], 1.0f / (16.0f * static_cast<float>(std::pow(160000.0, p / 32.0))),
                1e-12f)
        << p;
  }
}

TEST(Rope, InverseUndoesForwardAndPosZeroIsIdentity) {
  for (bool compressed : {false, true}) {
    const RopeTable t = rope_table(compressed);
    std::array<float, 64> x{}, y{};
    for (int i = 0; i < 64; ++i) x[i] = std::sin(0.37f * static_cast<float>(i + 1));
    y = x;
    apply_rope(t, 0, y, false);
    EXPECT_EQ(y, x);
    apply_rope(t, 123457, y, false);
    apply_rope(t, 123457, y, true);
    for (int i = 0; i < 64; ++i) EXPECT_NEAR(y[i], x[i], 1e-6f);
  }
}

}  // namespace
}  // namespace ds4::model
