// src/backend/cuda/blas_products_test.cpp: the cuBLAS products of F16 / F32 weights
// (blas_products.h) against a double-precision reference on the host, on fresh random inputs,
// with every output element poisoned first; and the F16 hi / lo split (kernels/f16_split.cuh).
#include "backend/cuda/blas_products.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "backend/cuda/kernels/f16_split.cuh"
#include "backend/cuda/kernels/kernel_test.h"
#include "base/f16.h"

namespace ds4::backend::cuda {
namespace {

using test::DeviceBuffer;
using test::fresh_seed;
using test::have_device;
using test::to_device;

// FP32 GEMM of 1,000-term rows: each output's rounding error is a few float ulps of the sum of
// |terms| (relative L2 ~1e-7 measured order); 1e-5 is far above that and far below any wrong
// index or missing term (>= 1e-2).
constexpr double kF32RelL2 = 1e-5;
// F16 weights with the rows split into hi + lo F16 parts: inputs exact to ~2^-22, FP32
// accumulation: the same bound as F32.
constexpr double kF16SplitRelL2 = 1e-5;

struct Case {
  gguf::GgufType type;
  int64_t out, cols, rows;
  double tol;
};

void run_case(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const bool f16 = c.type == gguf::GgufType::kF16;
  std::vector<float> wf(c.out * c.cols), x(c.rows * c.cols);
  std::vector<uint16_t> wh(f16 ? wf.size() : 0);
  for (size_t i = 0; i < wf.size(); ++i) {
    wf[i] = 0.05f * nd(rng);
    if (f16) {
      wh[i] = ds4::f32_to_f16(wf[i]);
      wf[i] = ds4::f16_to_f32(wh[i]);
    }
  }
  for (float& v : x) v = 3.0f * nd(rng);
  DeviceBuffer dw = f16 ? to_device(wh) : to_device(wf);
  DeviceBuffer dx = to_device(x);
  DeviceBuffer dy(static_cast<size_t>(c.out * c.rows) * sizeof(float));
  dy.fill(0xff);  // NaN: an element left unwritten fails the check
  Weight w;
  w.data = dw.get();
  w.type = c.type;
  w.ne = {c.cols, c.out, 1};
  ASSERT_TRUE(BlasProducts::applies(w, nullptr, nullptr, 1, c.rows, dx.get<float>()));
  BlasProducts blas;
  DeviceBuffer scratch(static_cast<size_t>(std::max<int64_t>(blas.scratch_bytes(w, c.rows), 1)));
  blas.run(w, dx.get<float>(), c.rows, dy.get<float>(), scratch.get(), nullptr);
  DS4_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> y(c.out * c.rows);
  dy.download(y.data(), y.size() * sizeof(float));
  double num = 0, den = 0;
  bool finite = true;
  for (int64_t r = 0; r < c.rows; ++r) {
    for (int64_t o = 0; o < c.out; ++o) {
      double ref = 0;
      for (int64_t k = 0; k < c.cols; ++k) ref += double(wf[o * c.cols + k]) * x[r * c.cols + k];
      const double got = y[r * c.out + o];
      finite = finite && std::isfinite(got);
      num += (got - ref) * (got - ref);
      den += ref * ref;
    }
  }
  const double rel = std::sqrt(num / den);
  const std::string what = std::string(gguf::to_string(c.type)) + " " + std::to_string(c.out) +
                           "x" + std::to_string(c.cols) + " by " + std::to_string(c.rows) +
                           " rows, seed " + std::to_string(seed);
  EXPECT_TRUE(finite) << what;
  EXPECT_TRUE(rel <= c.tol) << what << ": rel L2 " << rel << " > " << c.tol;
}

TEST(CudaBlasProducts, AgainstDoubleReference) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const uint32_t seed = fresh_seed();
  const Case cases[] = {
      {gguf::GgufType::kF32, 300, 1024, 64, kF32RelL2},
      {gguf::GgufType::kF32, 24, 4096, 16, kF32RelL2},
      {gguf::GgufType::kF16, 300, 1024, 64, kF16SplitRelL2},
      {gguf::GgufType::kF16, 24, 4096, 17, kF16SplitRelL2},
  };
  for (size_t i = 0; i < std::size(cases); ++i) run_case(cases[i], seed + static_cast<uint32_t>(i));
}

TEST(CudaBlasProducts, DeclinesWhatItDoesNotCover) {
  float* aligned = reinterpret_cast<float*>(uintptr_t{256});
  Weight w;
  w.data = aligned;
  w.type = gguf::GgufType::kF16;
  w.ne = {1024, 64, 1};
  EXPECT_TRUE(BlasProducts::applies(w, nullptr, nullptr, 1, BlasProducts::kMinRows, aligned));
  EXPECT_TRUE(!BlasProducts::applies(w, nullptr, nullptr, 1, BlasProducts::kMinRows - 1, aligned));
  EXPECT_TRUE(!BlasProducts::applies(w, nullptr, nullptr, 2, 64, aligned));
  EXPECT_TRUE(!BlasProducts::applies(w, nullptr, nullptr, 1, 64, aligned + 1));
  int32_t idx = 0;
  EXPECT_TRUE(!BlasProducts::applies(w, &idx, nullptr, 1, 64, aligned));
  EXPECT_TRUE(!BlasProducts::applies(w, nullptr, &idx, 1, 64, aligned));
  w.type = gguf::GgufType::kQ8_0;
  EXPECT_TRUE(!BlasProducts::applies(w, nullptr, nullptr, 1, 64, aligned));
}

TEST(CudaF16Split, HiPlusLoIsTheValue) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(4096);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = nd(rng) * std::ldexp(1.0f, static_cast<int>(i % 19) - 8);  // |x| < 2^13
  DeviceBuffer dx = to_device(x), dhi(x.size() * 2), dlo(x.size() * 2);
  launch_f16_split(dx.get<float>(), static_cast<int64_t>(x.size()), dhi.get<__half>(),
                   dlo.get<__half>(), nullptr);
  DS4_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint16_t> hi(x.size()), lo(x.size());
  dhi.download(hi.data(), hi.size() * 2);
  dlo.download(lo.data(), lo.size() * 2);
  // hi + lo within 2^-20 of x (2^-24 absolute where hi is subnormal).
  int bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float h = ds4::f16_to_f32(hi[i]), l = ds4::f16_to_f32(lo[i]);
    bad += h != ds4::f16_round(x[i]) || l != ds4::f16_round(x[i] - h) ||
           std::fabs((h + l) - x[i]) > std::max(std::ldexp(std::fabs(x[i]), -20), 0x1p-24f);
  }
  EXPECT_EQ(bad, 0) << "seed " << seed;
}

}  // namespace
}  // namespace ds4::backend::cuda
