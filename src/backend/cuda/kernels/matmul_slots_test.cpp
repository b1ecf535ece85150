// src/backend/cuda/kernels/matmul_slots_test.cpp (label cuda): what a product's slots get does not
// depend on what they are launched with. Several products of one input in one launch
// (launch_matmul_parts) equal their launches alone; a few slots of one launch (a speculative
// verification's rows) get the bits of each slot's row launched alone; the rows kernel's passes
// (a batched decode step's routed products) give each slot the bits of its row alone.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/check.h"
#include "backend/cuda/kernels/kernel_test.h"
#include "backend/cuda/kernels/matmul_planar.cuh"
#include "backend/cuda/kernels/matmul_q.cuh"
#include "backend/cuda/kernels/matmul_test_util.h"

namespace ds4::backend::cuda::test {
namespace {

using gguf::GgufType;

std::vector<float> gaussian(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  return x;
}

TEST(CudaMatmulQ, PartsEqualTheirLaunchesAlone) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const uint32_t seed = fresh_seed();
  std::printf("  parts: seed %u\n", seed);
  std::mt19937 rng(seed);
  struct PartsCase {
    GgufType t;
    int64_t cols;
    std::vector<int64_t> outs;
    int64_t n_mat;
    std::vector<int32_t> experts;  // empty: one slot of matrix 0
    bool random_blocks = false;    // Case::random_blocks (IQ2_XXS rows are slow to quantize)
  };
  const std::vector<PartsCase> cases = {
      {GgufType::kF16, 1024, {1536, 256, 64, 256, 1024}, 1, {}},  // 2, 8, 8, 8 and 4 warps per row
      {GgufType::kF32, 1024, {17, 300}, 1, {}},  // a later part taller than the first
      {GgufType::kQ8_0, 4096, {1024, 512}, 1, {}},
      {GgufType::kQ8_0, 1024, {40, 96, 201}, 1, {}},
      {GgufType::kIQ2_XXS, 1024, {64, 64}, 4, {2, 0, 3}},
      {GgufType::kQ2_K, 512, {40, 40}, 3, {1, 1, 2, 0}},
      // 48 expert slots of Flash's gate and up shapes (a tail row CTA in the first): the rows
      // kernel takes several passes per CTA, the parts another count than each alone.
      {GgufType::kIQ2_XXS, 4096, {2000, 2048}, 8, spread_experts(48, 8), true},
  };
  for (const PartsCase& pc : cases) {
    const std::string what = std::string(gguf::to_string(pc.t)) + " parts of " +
                             std::to_string(pc.outs.size()) + ", seed " + std::to_string(seed);
    const bool planar = has_planar_layout(pc.t);
    const int64_t n_slots = pc.experts.empty() ? 1 : static_cast<int64_t>(pc.experts.size());
    const DeviceRows x = encode_on_device(
        pc.t, gaussian(static_cast<size_t>(n_slots * pc.cols), rng), n_slots, pc.cols);
    const DeviceBuffer dexperts = to_device(pc.experts);
    const int32_t* experts = pc.experts.empty() ? nullptr : dexperts.get<int32_t>();
    const int64_t y_stride = *std::max_element(pc.outs.begin(), pc.outs.end()) + 3;
    const size_t y_bytes = static_cast<size_t>(n_slots * y_stride) * sizeof(float);

    std::vector<DeviceWeight> weights;
    std::vector<DeviceBuffer> alone, together;
    for (size_t p = 0; p < pc.outs.size(); ++p) {
      Case c{"parts", pc.cols, pc.outs[p], n_slots, n_slots, 1, pc.n_mat};
      c.random_blocks = pc.random_blocks;
      weights.push_back(
          device_weight(pc.t, make_weights(pc.t, c, rng), pc.cols, pc.outs[p], pc.n_mat));
      alone.emplace_back(y_bytes);
      together.emplace_back(y_bytes);
      alone.back().fill(0xff);
      together.back().fill(0xff);
      launch_matmul(weights.back().w, x.enc.get(), x.row_bytes, experts, nullptr, n_slots, 1,
                    alone.back().get<float>(), y_stride, nullptr);
    }
    std::vector<const Weight*> ws;
    std::vector<float*> ys;
    for (size_t p = 0; p < weights.size(); ++p) {
      ws.push_back(&weights[p].w);
      ys.push_back(together[p].get<float>());
    }
    EXPECT_TRUE(launch_matmul_parts(ws, ys, x.enc.get(), x.row_bytes, experts, nullptr, n_slots,
                                    y_stride, nullptr))
        << what << ": refused";
    DS4_CUDA_CHECK(cudaDeviceSynchronize());
    for (size_t p = 0; p < weights.size(); ++p) {
      std::vector<uint8_t> a(y_bytes), b(y_bytes);
      alone[p].download(a.data(), y_bytes);
      together[p].download(b.data(), y_bytes);
      EXPECT_EQ(std::memcmp(a.data(), b.data(), y_bytes), 0)
          << what << ": part " << p << " differs";
    }
    // Two slots of one matrix go to the slots or tile kernels, which take no parts.
    if (pc.experts.empty() && planar) {
      DeviceBuffer denc2(static_cast<size_t>(2 * x.row_bytes));
      together[0].fill(0xff);
      EXPECT_FALSE(launch_matmul_parts(ws, ys, denc2.get(), x.row_bytes, nullptr, nullptr, 2,
                                       y_stride, nullptr))
          << what << ": two slots taken";
      DS4_CUDA_CHECK(cudaDeviceSynchronize());
      std::vector<uint8_t> b(y_bytes);
      together[0].download(b.data(), y_bytes);
      EXPECT_TRUE(std::all_of(b.begin(), b.end(), [](uint8_t v) { return v == 0xff; }))
          << what << ": a refused launch wrote";
    }
  }
}

// A speculative verification (issue 51) runs the drafts' rows as one product of a few slots, and
// greedy decoding with drafts must give the tokens of one-row decode: every slot of a launch of
// 2 .. kExactSlots slots gets the bits of that slot's row launched alone, for each type and for
// the shapes of Flash's decode products (compressor and indexer projections of 1,024 and 512
// rows, the router's 256 and the HC rows' 24 F32 ones, attention's Q8_0 rows, routed experts).
// The q8 tensor-core kernel (8 slots and more) and the tiles (16 and more) sum in other orders.
TEST(CudaMatmulQ, FewSlotsGiveEachSlotTheBitsOfItsRowAlone) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  constexpr int64_t kExactSlots = 7;
  const uint32_t seed = fresh_seed();
  std::printf("  few slots: seed %u\n", seed);
  std::mt19937 rng(seed);
  struct SlotsCase {
    GgufType t;
    int64_t cols, out, n_mat;
  };
  const std::vector<SlotsCase> cases = {
      {GgufType::kF16, 4096, 1024, 1},    {GgufType::kF16, 4096, 512, 1},
      {GgufType::kF16, 4096, 256, 1},     {GgufType::kF16, 1024, 64, 1},
      {GgufType::kF32, 4096, 256, 1},     {GgufType::kF32, 16384, 24, 1},
      {GgufType::kQ8_0, 4096, 1024, 1},   {GgufType::kQ8_0, 4096, 4096, 1},
      {GgufType::kIQ2_XXS, 4096, 256, 8}, {GgufType::kQ2_K, 2048, 256, 8},
  };
  for (const SlotsCase& sc : cases) {
    const bool routed = sc.n_mat > 1;
    Case c{"few slots", sc.cols, sc.out, kExactSlots, kExactSlots, 1, sc.n_mat};
    c.random_blocks = true;  // valid blocks without quantizing (IQ2_XXS rows are slow to make)
    const DeviceWeight dw =
        device_weight(sc.t, make_weights(sc.t, c, rng), sc.cols, sc.out, sc.n_mat);
    const Weight& wt = dw.w;
    const DeviceRows x = encode_on_device(
        sc.t, gaussian(static_cast<size_t>(kExactSlots * sc.cols), rng), kExactSlots, sc.cols);
    std::vector<int32_t> experts(kExactSlots);
    for (int32_t& e : experts) e = static_cast<int32_t>(rng() % static_cast<uint32_t>(sc.n_mat));
    const DeviceBuffer dexperts = to_device(experts);
    const size_t row_bytes = static_cast<size_t>(sc.out) * sizeof(float);
    // Each slot alone: its encoded row and expert, one slot.
    std::vector<std::vector<uint8_t>> alone(kExactSlots, std::vector<uint8_t>(row_bytes));
    for (int64_t j = 0; j < kExactSlots; ++j) {
      DeviceBuffer y(row_bytes);
      launch_matmul(wt, x.enc.get<uint8_t>() + j * x.row_bytes, x.row_bytes,
                    routed ? dexperts.get<int32_t>() + j : nullptr, nullptr, 1, 1, y.get<float>(),
                    sc.out, nullptr);
      DS4_CUDA_CHECK(cudaDeviceSynchronize());
      y.download(alone[static_cast<size_t>(j)].data(), row_bytes);
    }
    for (int64_t n = 2; n <= kExactSlots; ++n) {
      DeviceBuffer y(static_cast<size_t>(n) * row_bytes);
      const int64_t split = matmul_split_bytes(wt, n, 1, routed);
      DeviceBuffer scratch(static_cast<size_t>(std::max<int64_t>(split, 1)));
      launch_matmul(wt, x.enc.get(), x.row_bytes, routed ? dexperts.get<int32_t>() : nullptr,
                    nullptr, n, 1, y.get<float>(), sc.out, nullptr, nullptr, PlanarPath::kAuto,
                    split > 0 ? scratch.get() : nullptr);
      DS4_CUDA_CHECK(cudaDeviceSynchronize());
      std::vector<uint8_t> got(static_cast<size_t>(n) * row_bytes);
      y.download(got.data(), got.size());
      for (int64_t j = 0; j < n; ++j) {
        EXPECT_EQ(std::memcmp(got.data() + j * static_cast<int64_t>(row_bytes),
                              alone[static_cast<size_t>(j)].data(), row_bytes),
                  0)
            << gguf::to_string(sc.t) << " " << sc.cols << " x " << sc.out << ": slot " << j
            << " of " << n << " differs from its row alone (seed " << seed << ")";
      }
    }
  }
}

// A batched decode step's routed products (6 expert slots per session) have the rows kernel take
// several passes of rows per CTA (planar_rows_passes); each slot must still get the bits of its
// row launched alone (one pass), the CTAs' tail rows (out not a multiple of a CTA's rows)
// included.
TEST(CudaMatmulQ, RoutedRowsInPassesGiveEachSlotTheBitsOfItsRowAlone) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const uint32_t seed = fresh_seed();
  std::printf("  rows in passes: seed %u\n", seed);
  std::mt19937 rng(seed);
  struct PassCase {
    GgufType t;
    int64_t cols, out, n_mat, n_slots;
  };
  const std::vector<PassCase> cases = {
      {GgufType::kIQ2_XXS, 4096, 2000, 8, 48},  // Flash's gate / up rows, 8 sessions
      {GgufType::kQ2_K, 2048, 4100, 8, 96},     // its down rows (a tail), 16 sessions
      {GgufType::kQ8_0, 4096, 300, 4, 200},
  };
  for (const PassCase& pc : cases) {
    const std::string what = std::string(gguf::to_string(pc.t)) + " " + std::to_string(pc.cols) +
                             " x " + std::to_string(pc.out) + ", seed " + std::to_string(seed);
    Case c{"passes", pc.cols, pc.out, pc.n_slots, pc.n_slots, 1, pc.n_mat};
    c.random_blocks = true;
    const DeviceWeight dw =
        device_weight(pc.t, make_weights(pc.t, c, rng), pc.cols, pc.out, pc.n_mat);
    const Weight& wt = dw.w;
    EXPECT_GT(planar_rows_passes(wt, pc.n_slots), 1) << what;
    EXPECT_EQ(planar_rows_passes(wt, 1), 1) << what;
    const DeviceRows x = encode_on_device(
        pc.t, gaussian(static_cast<size_t>(pc.n_slots * pc.cols), rng), pc.n_slots, pc.cols);
    const std::vector<int32_t> experts =
        spread_experts(static_cast<int>(pc.n_slots), static_cast<int>(pc.n_mat));
    const DeviceBuffer dexperts = to_device(experts);
    const size_t row_bytes = static_cast<size_t>(pc.out) * sizeof(float);
    DeviceBuffer y(static_cast<size_t>(pc.n_slots) * row_bytes);
    launch_matmul(wt, x.enc.get(), x.row_bytes, dexperts.get<int32_t>(), nullptr, pc.n_slots, 1,
                  y.get<float>(), pc.out, nullptr);
    DS4_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<uint8_t> got(static_cast<size_t>(pc.n_slots) * row_bytes);
    y.download(got.data(), got.size());
    DeviceBuffer y1(row_bytes);
    std::vector<uint8_t> alone(row_bytes);
    for (int64_t j = 0; j < pc.n_slots; ++j) {
      launch_matmul(wt, x.enc.get<uint8_t>() + j * x.row_bytes, x.row_bytes,
                    dexperts.get<int32_t>() + j, nullptr, 1, 1, y1.get<float>(), pc.out, nullptr);
      DS4_CUDA_CHECK(cudaDeviceSynchronize());
      y1.download(alone.data(), row_bytes);
      EXPECT_EQ(
          std::memcmp(got.data() + j * static_cast<int64_t>(row_bytes), alone.data(), row_bytes), 0)
          << what << ": slot " << j << " of " << pc.n_slots << " differs from its row alone";
    }
  }
}

}  // namespace
}  // namespace ds4::backend::cuda::test
