// src/backend/cuda/kernels/selection_test.cpp: the device selections against their CPU rules.
// The router (routing.cuh) against route_token (backend/routing.h), bit for bit: selected
// experts, their order, the weights and the rewritten probabilities, for top-k routing with and
// without the selection bias (with deliberate score ties, which the lower expert id must win) and
// for hash routing. The indexer top-k (topk.cuh) against select_top_k (backend/row_rules.h):
// the same indices in the same order, with ties and signed zeros.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/kernels/kernel_test.h"
#include "backend/cuda/kernels/routing.cuh"
#include "backend/cuda/kernels/topk.cuh"
#include "backend/routing.h"
#include "backend/row_rules.h"

namespace ds4::backend::cuda {
namespace {

using test::DeviceBuffer;
using test::fresh_seed;
using test::have_device;
using test::to_device;

struct RouteCase {
  const char* name;
  int n_rows, n_expert, k;
  bool bias, hash, ties;
};

void run_route(const RouteCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const int n_vocab = 50;
  std::vector<float> logits(static_cast<size_t>(c.n_rows) * c.n_expert);
  for (float& v : logits) v = normal(rng);
  if (c.ties) {  // quantised logits: many equal scores per row
    for (float& v : logits) v = static_cast<float>(static_cast<int>(v));
  }
  std::vector<float> bias(static_cast<size_t>(c.n_expert));
  for (float& v : bias) v = c.ties ? 0.0f : 0.1f * normal(rng);
  std::vector<int32_t> table(static_cast<size_t>(n_vocab) * c.k), tokens(c.n_rows);
  std::uniform_int_distribution<int> ex(0, c.n_expert - 1), tok(0, n_vocab - 1);
  for (int32_t& e : table) e = ex(rng);
  for (int32_t& t : tokens) t = tok(rng);

  // CPU reference.
  std::vector<float> p = logits;
  std::vector<int32_t> sel(static_cast<size_t>(c.n_rows) * c.k);
  std::vector<float> w(sel.size());
  for (int t = 0; t < c.n_rows; ++t) {
    route_token(p.data() + static_cast<size_t>(t) * c.n_expert, c.n_expert,
                c.bias ? bias.data() : nullptr,
                c.hash ? table.data() + static_cast<size_t>(tokens[t]) * c.k : nullptr, c.k, 1.5f,
                sel.data() + static_cast<size_t>(t) * c.k, w.data() + static_cast<size_t>(t) * c.k);
  }

  DeviceBuffer dlog = to_device(logits);
  const DeviceBuffer dbias = to_device(bias), dtable = to_device(table), dtok = to_device(tokens);
  DeviceBuffer dsel(sel.size() * 4), dw(w.size() * 4), drows(sel.size() * 4);
  launch_route(dlog.get<float>(), c.n_rows, c.n_expert, c.bias ? dbias.get<float>() : nullptr,
               c.hash ? dtable.get<int32_t>() : nullptr, c.hash ? dtok.get<int32_t>() : nullptr,
               c.k, 1.5f, dsel.get<int32_t>(), dw.get<float>(), drows.get<int32_t>(), nullptr);
  DS4_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> gp(p.size()), gw(w.size());
  std::vector<int32_t> gsel(sel.size()), grows(sel.size());
  dlog.download(gp.data(), gp.size() * 4);
  dsel.download(gsel.data(), gsel.size() * 4);
  dw.download(gw.data(), gw.size() * 4);
  drows.download(grows.data(), grows.size() * 4);

  const std::string what = std::string(c.name) + " seed " + std::to_string(seed);
  EXPECT_TRUE(std::memcmp(gp.data(), p.data(), p.size() * 4) == 0) << what << ": probabilities";
  EXPECT_TRUE(gsel == sel) << what << ": selected experts";
  EXPECT_TRUE(std::memcmp(gw.data(), w.data(), w.size() * 4) == 0) << what << ": weights";
  bool rows_ok = true;
  for (size_t i = 0; i < grows.size(); ++i) rows_ok &= grows[i] == static_cast<int32_t>(i / c.k);
  EXPECT_TRUE(rows_ok) << what << ": slot rows";
}

TEST(CudaRouting, MatchesRouteToken) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const uint32_t seed = fresh_seed();
  const RouteCase cases[] = {
      {"flash top-6 with bias", 37, 256, 6, true, false, false},
      {"top-8 without bias", 5, 64, 8, false, false, false},
      {"ties, lower id wins", 20, 256, 6, true, false, true},
      {"hash routing", 9, 256, 6, false, true, false},
      {"k = n_expert", 3, 8, 8, true, false, true},
  };
  for (size_t i = 0; i < std::size(cases); ++i)
    run_route(cases[i], seed + static_cast<uint32_t>(i));
}

void run_top_k(int n, int k, int mode, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> scores(static_cast<size_t>(n));
  for (float& v : scores) {
    v = normal(rng);
    if (mode == 1) v = static_cast<float>(static_cast<int>(4.0f * v));  // heavy ties
    if (mode == 2) v = v < 0.5f ? (v < -0.5f ? -0.0f : 0.0f) : v;       // mostly signed zeros
  }
  std::vector<int32_t> order, want;
  select_top_k(scores.data(), n, k, &order, &want);
  const DeviceBuffer ds = to_device(scores);
  DeviceBuffer dout(static_cast<size_t>(k) * 4);
  dout.fill(0xff);
  launch_select_top_k(ds.get<float>(), n, k, dout.get<int32_t>(), nullptr);
  DS4_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<int32_t> got(static_cast<size_t>(k));
  dout.download(got.data(), got.size() * 4);
  EXPECT_TRUE(got == want) << "top-" << k << " of " << n << " mode " << mode << " seed " << seed;
}

TEST(CudaTopK, MatchesSelectTopK) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const uint32_t seed = fresh_seed();
  uint32_t s = seed;
  for (int mode = 0; mode < 3; ++mode) {
    run_top_k(513, 512, mode, s++);
    run_top_k(600, 512, mode, s++);
    run_top_k(4097, 512, mode, s++);
    run_top_k(70001, 512, mode, s++);
    run_top_k(1000, 3, mode, s++);
  }
}

// The batched form: rows at positions p0 .. p0 + rows - 1 each select among (p + 1) / 4 scores;
// rows with too few scores are left untouched.
TEST(CudaTopK, RowsFollowTheirPositions) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  constexpr int kK = 16, kP0 = 50, kRows = 40, kStride = (kP0 + kRows) / 4;
  std::vector<float> scores(static_cast<size_t>(kRows) * kStride);
  for (float& v : scores) v = static_cast<float>(static_cast<int>(3.0f * normal(rng)));  // ties
  const DeviceBuffer ds = to_device(scores);
  DeviceBuffer dout(static_cast<size_t>(kRows) * kK * 4);
  dout.fill(0xff);
  launch_select_top_k_rows(ds.get<float>(), kStride, kP0, kRows, 4, kK, dout.get<int32_t>(),
                           nullptr);
  DS4_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<int32_t> got(static_cast<size_t>(kRows) * kK);
  dout.download(got.data(), got.size() * 4);
  for (int t = 0; t < kRows; ++t) {
    const int n = (kP0 + t + 1) / 4;
    std::vector<int32_t> want(kK, -1), order;
    if (n > kK)
      select_top_k(scores.data() + static_cast<size_t>(t) * kStride, n, kK, &order, &want);
    const std::vector<int32_t> row(got.begin() + t * kK, got.begin() + (t + 1) * kK);
    EXPECT_TRUE(row == want) << "row " << t << " (" << n << " scores) seed " << seed;
  }
}

}  // namespace
}  // namespace ds4::backend::cuda
