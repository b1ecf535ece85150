// src/backend/cuda/kernels/indexer_test.cpp: the indexer's batch scores on FP4-simulated rows
// (the canonical numerics: Hadamard + E2M1 on keys and query heads, keys f16-rounded), the int8
// tensor-core path (launch_indexer_select with codes, indexer_imma.cuh) against the float
// kernels (codes null) and the CPU's AVX2 kernel, bit for bit: every dot is an exact sum in all
// three and the heads combine in one order. Both against a double-precision evaluation of the
// definition, within kCombineTol. The picks of both paths must be the same rows.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "backend/cpu/indexer_scores.h"
#include "backend/cuda/kernels/attention.cuh"
#include "backend/cuda/kernels/kernel_test.h"
#include "base/f16.h"
#include "quant/lowp_sim.h"

namespace ds4::backend::cuda {
namespace {

using test::DeviceBuffer;
using test::fresh_seed;
using test::have_device;
using test::to_device;

constexpr int kIhd = 128;
// The float head combine (a chain of up to 64 fused multiply-adds per lane and 3 additions) against
// the exact sum: well inside 64 roundings of 2^-24 of the sum of the terms' magnitudes.
constexpr double kCombineTol = 64.0 * 0x1p-24;

struct Case {
  const char* name;
  int n_ih, top_k, p0, rows;
};

struct Result {
  std::vector<float> scores;
  std::vector<int32_t> picks;
};

Result run_select(const Case& c, const DeviceBuffer& keys, const DeviceBuffer& iq,
                  int64_t iq_stride, const DeviceBuffer& w, int64_t w_stride, float wscale,
                  bool int8) {
  const int n_keys = (c.p0 + c.rows) / 4;
  const size_t n_scores = static_cast<size_t>(c.rows) * n_keys;
  DeviceBuffer scores(n_scores * 4), picks(static_cast<size_t>(c.rows) * c.top_k * 4);
  DeviceBuffer codes(int8 ? indexer_code_bytes(n_keys, c.rows, c.n_ih) : 0);
  scores.fill(0);
  picks.fill(0xff);
  launch_indexer_select(keys.get<float>(), iq.get<float>(), iq_stride, w.get<float>(), w_stride,
                        wscale, c.n_ih, c.top_k, RowSpan{c.p0, c.rows}, n_keys,
                        int8 ? codes.get() : nullptr, scores.get<float>(), picks.get<int32_t>(),
                        nullptr);
  DS4_CUDA_CHECK(cudaDeviceSynchronize());
  Result r{std::vector<float>(n_scores),
           std::vector<int32_t>(static_cast<size_t>(c.rows) * c.top_k)};
  scores.download(r.scores.data(), n_scores * 4);
  picks.download(r.picks.data(), r.picks.size() * 4);
  return r;
}

void run_case(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int n_keys = (c.p0 + c.rows) / 4;
  std::vector<float> keys(static_cast<size_t>(n_keys) * kIhd);
  for (float& v : keys) v = normal(rng);
  for (int k = 0; k < n_keys; ++k) {
    const std::span<float> key(keys.data() + static_cast<size_t>(k) * kIhd, kIhd);
    quant::indexer_fp4_simulate(key);
    for (float& v : key) v = f16_to_f32(f32_to_f16(v));
  }
  const int64_t iq_stride = int64_t{c.n_ih} * kIhd + 8, w_stride = c.n_ih + 3;
  std::vector<float> iq(static_cast<size_t>(c.rows * iq_stride), 0.0f);
  std::vector<float> w(static_cast<size_t>(c.rows * w_stride), 0.0f);
  for (int t = 0; t < c.rows; ++t) {
    for (int h = 0; h < c.n_ih; ++h) {
      const std::span<float> head(iq.data() + t * iq_stride + h * kIhd, kIhd);
      for (float& v : head) v = normal(rng);
      quant::indexer_fp4_simulate(head);
      w[static_cast<size_t>(t * w_stride + h)] = normal(rng);
    }
  }
  const float wscale = 1.0f / std::sqrt(static_cast<float>(kIhd * c.n_ih));
  const DeviceBuffer dkeys = to_device(keys), diq = to_device(iq), dw = to_device(w);
  const Result fl = run_select(c, dkeys, diq, iq_stride, dw, w_stride, wscale, false);
  const Result i8 = run_select(c, dkeys, diq, iq_stride, dw, w_stride, wscale, true);

  const cpu::IndexerScoresFn avx2 = cpu::indexer_scores_avx2();
  const std::string what = std::string(c.name) + " seed " + std::to_string(seed);
  int rows_checked = 0;
  for (int t = 0; t < c.rows; ++t) {
    const int n_t = (c.p0 + t + 1) / 4;
    if (n_t <= c.top_k) continue;
    ++rows_checked;
    const float* q = iq.data() + t * iq_stride;
    std::vector<float> ws(static_cast<size_t>(c.n_ih));
    for (int h = 0; h < c.n_ih; ++h) ws[h] = w[static_cast<size_t>(t * w_stride + h)] * wscale;
    std::vector<float> cpu_scores(static_cast<size_t>(n_t));
    if (avx2 != nullptr) avx2(keys.data(), n_t, q, ws.data(), c.n_ih, cpu_scores.data());
    int off_float = 0, off_cpu = 0, off_exact = 0;
    for (int k = 0; k < n_t; ++k) {
      double exact = 0.0, mag = 0.0;
      for (int h = 0; h < c.n_ih; ++h) {
        double dot = 0.0;
        for (int d = 0; d < kIhd; ++d)
          dot += double{keys[static_cast<size_t>(k) * kIhd + d]} * q[h * kIhd + d];
        const double term = std::max(dot, 0.0) * ws[h];
        exact += term;
        mag += std::fabs(term);
      }
      const size_t at = static_cast<size_t>(t) * n_keys + k;
      const float got = i8.scores[at];
      off_float += got != fl.scores[at];
      off_cpu += avx2 != nullptr && got != cpu_scores[k];
      off_exact += std::fabs(got - exact) > kCombineTol * mag;
    }
    EXPECT_EQ(off_float, 0) << what << ": row " << t << " scores off the float kernel's";
    EXPECT_EQ(off_cpu, 0) << what << ": row " << t << " scores off the CPU's AVX2 kernel's";
    EXPECT_EQ(off_exact, 0) << what << ": row " << t << " scores off the exact ones";
    const std::vector<int32_t> a(fl.picks.begin() + t * c.top_k,
                                 fl.picks.begin() + (t + 1) * c.top_k);
    const std::vector<int32_t> b(i8.picks.begin() + t * c.top_k,
                                 i8.picks.begin() + (t + 1) * c.top_k);
    EXPECT_TRUE(a == b) << what << ": row " << t << " picks differ";
  }
  EXPECT_TRUE(rows_checked > 0) << what << ": no row selects";
}

TEST(CudaIndexer, Int8ScoresEqualTheFloatKernelsOnFp4Rows) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  uint32_t s = fresh_seed();
  // Flash's 64 heads and top-512 over keys that end mid-tile; 8 heads; rows of which the first
  // select nothing (n_t <= top_k) and the tile edge falls inside a CTA's rows; a deep position.
  run_case({"64 heads, 1,034 keys", 64, 512, 4099, 40}, s++);
  run_case({"8 heads", 8, 16, 200, 100}, s++);
  run_case({"24 heads, rows start below top_k", 24, 20, 60, 70}, s++);
  run_case({"64 heads, 8,200 keys, 17 rows", 64, 512, 32783, 17}, s++);
}

}  // namespace
}  // namespace ds4::backend::cuda
