// src/backend/cuda/kernels/pick_test.cpp (label cuda): the device picks (pick.cuh) against the
// host sampler (ds4/sampling.h) on the same logits rows of the full vocabulary, with the uniform
// the host draw takes from the same generator state:
// - greedy rows (ties, NaN, -inf, rows with nothing above -1e30): the host's argmax exactly;
// - peaked rows (a few tokens above min_p, as language models give): the host's token exactly;
// - flat rows (min_p 0, temperature 1 over 129,280 normal logits): a token whose interval of the
//   running sum (in double, on the host) holds the uniform within kFlatSlack of the total;
// - a row with no finite logit: the argmax, and `drew` 0 (the host draws no uniform then).
#include "backend/cuda/kernels/pick.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "backend/cuda/kernels/kernel_test.h"
#include "ds4/sampling.h"

namespace ds4::backend::cuda {
namespace {

using test::DeviceBuffer;
using test::fresh_seed;
using test::have_device;
using test::to_device;

constexpr int kVocab = 129280;
// The device sums a flat row's weights in chunks, the host one by one: float sums of 129,280
// terms in two orders differ by about sqrt(n) * 2^-24 of the total typically (2e-5), at most
// n * 2^-24 (8e-3) -- far more than a flat row's 1/n per token, so the two draws may land on
// tokens a few apart. Both are draws of the same distribution; the device's must hold the uniform
// within this share of the total.
constexpr double kFlatSlack = 8e-3;
// A peaked row keeps a few dozen weights; the two sums of them differ by a few float roundings
// (and expf's last bit), ~1e-7 of the total: a draw differs from the host's only where the uniform
// lies that close to the boundary between two tokens.
constexpr double kPeakedSlack = 1e-5;

struct Rows {
  std::vector<float> logits;  // n x kVocab
  std::vector<PickRowArgs> args;
};

std::vector<PickResult> run(const Rows& r) {
  DeviceBuffer d_logits = to_device(r.logits);
  std::vector<PickRowArgs> args = r.args;
  for (size_t i = 0; i < args.size(); ++i) args[i].logits = d_logits.get<float>() + i * kVocab;
  DeviceBuffer d_args = to_device(args);
  DeviceBuffer d_out(args.size() * sizeof(PickResult));
  launch_pick(d_args.get<PickRowArgs>(), static_cast<int>(args.size()), kVocab,
              d_out.get<PickResult>(), nullptr);
  DS4_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<PickResult> out(args.size());
  d_out.download(out.data(), out.size() * sizeof(PickResult));
  return out;
}

std::span<const float> row(const Rows& r, size_t i) {
  return std::span<const float>(r.logits).subspan(i * kVocab, kVocab);
}

// The share of the total weight before token `tok` and up to its end (the sampler's weights, in
// double), for a row's draw at temperature t and min_p.
struct Interval {
  double before, after;
};
Interval interval(std::span<const float> x, int tok, float t, float min_p) {
  float max = kNegInf;
  for (float v : x) max = std::max(max, v);
  double total = 0, before = -1, after = -1;
  for (int id = 0; id < kVocab; ++id) {
    double w = std::exp((static_cast<double>(x[size_t(id)]) - max) / t);
    if (w < min_p) w = 0;
    if (id == tok) before = total, after = total + w;
    total += w;
  }
  return {before / total, after / total};
}

TEST(CudaPick, GreedyRowsAreTheHostArgmax) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE(seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  Rows r;
  const int n = 12;
  r.logits.resize(size_t{n} * kVocab);
  for (float& v : r.logits) v = normal(rng);
  auto at = [&](int i, int id) -> float& { return r.logits[size_t(i) * kVocab + size_t(id)]; };
  for (int id = 0; id < kVocab; ++id) at(1, id) = std::round(at(1, id));  // many ties
  at(2, 77) = at(2, 99000) = 50.0f;                                       // a tie at the top
  at(3, 5) = std::numeric_limits<float>::quiet_NaN();
  at(3, 6) = std::numeric_limits<float>::infinity();
  at(3, 9) = std::numeric_limits<float>::infinity();
  for (int id = 0; id < kVocab; ++id) at(4, id) = kNegInf;  // nothing above -1e30
  for (int id = 0; id < kVocab; ++id) at(5, id) = -std::numeric_limits<float>::infinity();
  for (int id = 0; id < kVocab; ++id) at(6, id) = std::numeric_limits<float>::quiet_NaN();
  at(6, kVocab - 1) = -3.0f;
  r.args.assign(n, PickRowArgs{.temperature = 0.0f});
  const std::vector<PickResult> got = run(r);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(got[i].token, argmax(row(r, size_t(i)))) << "row " << i;
    EXPECT_EQ(got[i].drew, 0) << "row " << i;
  }
}

// Rows whose draws the host makes with Rng(seed + i): the device gets the uniform it takes first.
Rows draw_rows(int n, uint32_t seed, float sigma, float temperature, float min_p) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  Rows r;
  r.logits.resize(size_t(n) * kVocab);
  for (float& v : r.logits) v = normal(rng);
  r.args.resize(size_t(n));
  for (int i = 0; i < n; ++i) {
    Rng g(seed + static_cast<uint64_t>(i));
    r.args[size_t(i)] = {.temperature = temperature, .min_p = min_p, .uniform = g.uniform()};
  }
  return r;
}

TEST(CudaPick, PeakedDrawsAreTheHostDraws) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE(seed);
  // sigma 3 over 129,280 logits: the top few within log(1/min_p) of the best, as an LM's rows.
  for (float t : {1.0f, 0.7f, 1.3f}) {
    SCOPED_TRACE(t);
    const int n = 64;
    const Rows r = draw_rows(n, seed, 3.0f, t, 0.05f);
    const std::vector<PickResult> got = run(r);
    for (int i = 0; i < n; ++i) {
      Rng g(seed + static_cast<uint64_t>(i));
      const SamplingParams p{.temperature = t, .top_k = 0, .top_p = 1.0f, .min_p = 0.05f};
      const TokenId host = sample(row(r, size_t(i)), p, g);
      EXPECT_EQ(got[size_t(i)].drew, 1);
      if (got[size_t(i)].token == host) continue;
      // Only a uniform at the boundary between the two tokens may part them.
      const Interval d = interval(row(r, size_t(i)), got[size_t(i)].token, t, 0.05f);
      const Interval h = interval(row(r, size_t(i)), host, t, 0.05f);
      const double boundary = got[size_t(i)].token < host ? d.after : d.before;
      EXPECT_NEAR(r.args[size_t(i)].uniform, boundary, kPeakedSlack)
          << "row " << i << ": device " << got[size_t(i)].token << ", host " << host << " ["
          << h.before << ", " << h.after << ")";
    }
  }
}

TEST(CudaPick, FlatDrawsHoldTheUniform) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE(seed);
  const int n = 32;
  const Rows r = draw_rows(n, seed, 1.0f, 1.0f, 0.0f);
  const std::vector<PickResult> got = run(r);
  int same = 0;
  for (int i = 0; i < n; ++i) {
    const std::span<const float> x = row(r, size_t(i));
    const Interval d = interval(x, got[size_t(i)].token, 1.0f, 0.0f);
    const double u = r.args[size_t(i)].uniform;
    EXPECT_GE(u, d.before - kFlatSlack) << "row " << i;
    EXPECT_LE(u, d.after + kFlatSlack) << "row " << i;
    Rng g(seed + static_cast<uint64_t>(i));
    const SamplingParams p{.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f};
    same += got[size_t(i)].token == sample(x, p, g) ? 1 : 0;
  }
  std::printf("[pick] flat rows: %d of %d draws the host's token\n", same, n);
}

TEST(CudaPick, NoFiniteLogitGivesTheArgmaxWithoutAUniform) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  Rows r;
  r.logits.assign(size_t{2} * kVocab, kNegInf);
  r.logits[kVocab + 40] = std::numeric_limits<float>::infinity();  // row 1: +inf is not finite
  r.args.assign(2, PickRowArgs{.temperature = 1.0f, .min_p = 0.05f, .uniform = 0.5f});
  const std::vector<PickResult> got = run(r);
  EXPECT_EQ(got[0].token, 0);
  EXPECT_EQ(got[0].drew, 0);
  EXPECT_EQ(got[1].token, 40);
  EXPECT_EQ(got[1].drew, 0);
  Rng g(9);
  const uint64_t before = g.state();
  const SamplingParams p{.temperature = 1.0f};
  EXPECT_EQ(sample(row(r, 1), p, g), 40);
  EXPECT_EQ(g.state(), before);  // the host drew no uniform either
}

}  // namespace
}  // namespace ds4::backend::cuda
