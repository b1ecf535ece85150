// src/backend/cuda/kernels/matmul_q_test.cpp: the device encoders reproduce the CPU activation
// encoders byte for byte, and the device dots agree with the CPU reference dots (quant/dot_ref.cpp)
// for every weight type, with slots, row maps, groups and expert stacks: bit for bit for weights
// in the planar layout on its tile and tensor-core kernels (each forced, and the default choice),
// up to the order of the per-block float additions on the planar decode kernels and the native
// layout.
// Every test skips when no CUDA device is present. Shared pieces: kernel_test.h,
// matmul_test_util.h; the slot-independence tests are in matmul_slots_test.cpp.
#include "backend/cuda/kernels/matmul_q.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/check.h"
#include "backend/cuda/kernels/dense.cuh"
#include "backend/cuda/kernels/kernel_test.h"
#include "backend/cuda/kernels/matmul_planar.cuh"
#include "backend/cuda/kernels/matmul_test_util.h"
#include "base/f16.h"
#include "quant/activation.h"
#include "quant/dot.h"
#include "quant/quant_test_util.h"
#include "quant/quantize.h"

namespace ds4::backend::cuda {
namespace {

using gguf::GgufType;
using test::Case;
using test::DeviceBuffer;
using test::fresh_seed;
using test::have_device;
using test::make_weights;
using test::to_device;

// GPU vs CPU dot tolerance, relative to S = sum over blocks of |block term| (for F16/F32 a "block"
// is one product). Both sides add the same per-block terms (identical float bits: exact integer
// sums, the same float expression, no FMA) and differ only in the order of the float additions
// (lane partial sums and a warp tree against a left-to-right loop). Each order's rounding error
// is at most about n * 2^-24 * S in the worst case and in practice a few 2^-24 * S (errors of
// random sign on partial sums no larger than S); 1e-5 leaves two orders of magnitude of margin
// for the sizes here, while a wrong block, scale, sign or index moves the result by a whole term.
// F16 (matmul_f16_rows.cu, the products of one matrix and row group): each product is exact in
// a float fma and the float sums round as above. F32, and F16 products that kernel does not
// take: the device sums exact products in double like the reference, so it is far closer still.
constexpr double kReorderTol = 1e-5;
constexpr double kTolFloor = 1e-30;  // an all-cancelling row must still compare equal-ish
constexpr int kMaxReports = 5;       // mismatches printed per check

bool is_super_block_type(GgufType t) {
  return t == GgufType::kQ2_K || t == GgufType::kQ4_K || t == GgufType::kIQ2_XXS;
}

// Bytes of one CPU-encoded activation row (independent of the code under test).
int64_t cpu_encoded_bytes(GgufType t, int64_t cols) {
  if (t == GgufType::kQ8_0) return cols / quant::kQ8_0BlockElems * int64_t{sizeof(quant::ActQ8_0)};
  if (is_super_block_type(t))
    return cols / quant::kSuperBlockElems * int64_t{sizeof(quant::BlockQ8_K)};
  return cols * int64_t{sizeof(float)};
}

// Rows of `cols` values at x + r * stride, encoded by the CPU reference encoders.
std::vector<uint8_t> cpu_encode(GgufType t, const std::vector<float>& x, int64_t n_rows,
                                int64_t cols, int64_t stride) {
  const int64_t row_bytes = cpu_encoded_bytes(t, cols);
  std::vector<uint8_t> out(static_cast<size_t>(n_rows * row_bytes));
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* src = x.data() + r * stride;
    uint8_t* dst = out.data() + r * row_bytes;
    if (t == GgufType::kQ8_0) {
      quant::quantize_act_q8_0(src, reinterpret_cast<quant::ActQ8_0*>(dst), cols);
    } else if (is_super_block_type(t)) {
      quant::quantize_act_q8_k(src, reinterpret_cast<quant::BlockQ8_K*>(dst), cols);
    } else {
      std::memcpy(dst, src, static_cast<size_t>(row_bytes));
    }
  }
  return out;
}

// Encodes on the device and compares with the CPU bytes; returns the CPU encoding.
std::vector<uint8_t> check_encode(GgufType t, const std::vector<float>& x, int64_t n_rows,
                                  int64_t cols, int64_t stride, const DeviceBuffer& dx,
                                  const DeviceBuffer& denc, const std::string& what) {
  const int64_t row_bytes = cpu_encoded_bytes(t, cols);
  EXPECT_EQ(encoded_row_bytes(t, cols), row_bytes) << what;
  std::vector<uint8_t> want = cpu_encode(t, x, n_rows, cols, stride);
  launch_encode_rows(t, dx.get<float>(), n_rows, cols, stride, denc.get(), nullptr);
  DS4_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint8_t> got(want.size());
  denc.download(got.data(), got.size());
  int64_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (bad++ < kMaxReports) {
      std::printf("  %s: encoded byte %zu (row %lld, byte %lld): gpu %u cpu %u\n", what.c_str(), i,
                  static_cast<long long>(static_cast<int64_t>(i) / row_bytes),
                  static_cast<long long>(static_cast<int64_t>(i) % row_bytes), got[i], want[i]);
    }
  }
  EXPECT_EQ(bad, 0) << what << ": encoded bytes differ";
  return want;
}

// The CPU reference dot of one weight row and one encoded row, and S = sum |block term|, each
// block term taken as the reference dot of that block alone (0 + term is the term itself).
struct RefDot {
  float value;
  double scale;
};
RefDot cpu_dot(GgufType t, const uint8_t* w, const uint8_t* x, int64_t cols) {
  const quant::DotKernels& k = quant::reference_dot_kernels();
  RefDot r{0.0f, 0.0};
  switch (t) {
    case GgufType::kQ8_0: {
      const auto* wb = reinterpret_cast<const quant::BlockQ8_0*>(w);
      const auto* xb = reinterpret_cast<const quant::ActQ8_0*>(x);
      const int64_t nb = cols / quant::kQ8_0BlockElems;
      r.value = k.q8_0(wb, xb, nb);
      for (int64_t b = 0; b < nb; ++b) r.scale += std::fabs(k.q8_0(wb + b, xb + b, 1));
      break;
    }
    case GgufType::kQ2_K:
    case GgufType::kQ4_K:
    case GgufType::kIQ2_XXS: {
      const auto* xb = reinterpret_cast<const quant::BlockQ8_K*>(x);
      const int64_t nb = cols / quant::kSuperBlockElems;
      auto run = [&](int64_t b, int64_t n) -> float {
        if (t == GgufType::kQ2_K)
          return k.q2_k(reinterpret_cast<const quant::BlockQ2_K*>(w) + b, xb + b, n);
        if (t == GgufType::kQ4_K)
          return k.q4_k(reinterpret_cast<const quant::BlockQ4_K*>(w) + b, xb + b, n);
        return k.iq2_xxs(reinterpret_cast<const quant::BlockIQ2_XXS*>(w) + b, xb + b, n);
      };
      r.value = run(0, nb);
      for (int64_t b = 0; b < nb; ++b) r.scale += std::fabs(run(b, 1));
      break;
    }
    case GgufType::kF16: {
      const auto* wh = reinterpret_cast<const uint16_t*>(w);
      const auto* xf = reinterpret_cast<const float*>(x);
      r.value = k.f16(wh, xf, cols);
      for (int64_t i = 0; i < cols; ++i) r.scale += std::fabs(k.f16(wh + i, xf + i, 1));
      break;
    }
    default: {
      const auto* wf = reinterpret_cast<const float*>(w);
      const auto* xf = reinterpret_cast<const float*>(x);
      r.value = k.f32(wf, xf, cols);
      for (int64_t i = 0; i < cols; ++i) r.scale += std::fabs(static_cast<double>(wf[i]) * xf[i]);
      break;
    }
  }
  return r;
}

const char* path_name(PlanarPath p) {
  switch (p) {
    case PlanarPath::kAuto: return "auto";
    case PlanarPath::kScalar: return "scalar";
    case PlanarPath::kImma: return "imma";
    case PlanarPath::kQ8Mma: return "q8mma";
  }
  return "?";
}

void run_case(GgufType t, const Case& c, uint32_t seed) {
  const std::string what =
      std::string(gguf::to_string(t)) + " case '" + c.name + "' seed " + std::to_string(seed);
  std::mt19937 rng(seed);
  const int64_t enc_cols = c.groups * c.cols;
  const int64_t stride = enc_cols + 7;  // padded source rows; the padding is NaN and unread

  // Activations: gaussian, a different magnitude per row, never zero rows.
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> log_scale(-4.0f, 4.0f);
  std::vector<float> x(static_cast<size_t>(c.n_enc_rows * stride),
                       std::numeric_limits<float>::quiet_NaN());
  for (int64_t r = 0; r < c.n_enc_rows; ++r) {
    const float s = std::exp(log_scale(rng));
    for (int64_t i = 0; i < enc_cols; ++i) x[static_cast<size_t>(r * stride + i)] = s * normal(rng);
  }
  const std::vector<uint8_t> w = make_weights(t, c, rng);

  const DeviceBuffer dx = to_device(x);
  const int64_t enc_bytes = cpu_encoded_bytes(t, enc_cols);
  DeviceBuffer denc(static_cast<size_t>(c.n_enc_rows * enc_bytes));
  denc.fill(0xa5);
  const std::vector<uint8_t> enc =
      check_encode(t, x, c.n_enc_rows, enc_cols, stride, dx, denc, what);

  // Optionally re-lay the encoded rows with a larger stride, as a caller may.
  const int64_t enc_row_bytes = enc_bytes + c.enc_pad;
  DeviceBuffer denc_padded(static_cast<size_t>(c.n_enc_rows * enc_row_bytes));
  const void* enc_for_matmul = denc.get();
  if (c.enc_pad != 0) {
    denc_padded.fill(0xff);
    DS4_CUDA_CHECK(cudaMemcpy2D(denc_padded.get(), static_cast<size_t>(enc_row_bytes), denc.get(),
                                static_cast<size_t>(enc_bytes), static_cast<size_t>(enc_bytes),
                                static_cast<size_t>(c.n_enc_rows), cudaMemcpyDeviceToDevice));
    enc_for_matmul = denc_padded.get();
  }

  const DeviceBuffer dw = to_device(w);
  const DeviceBuffer dexperts = to_device(c.experts);
  const DeviceBuffer drows = to_device(c.rows);
  const int64_t y_stride = c.out + 3;
  const int64_t row_bytes =
      static_cast<int64_t>(*gguf::byte_size(t, static_cast<uint64_t>(c.cols)));
  const int64_t group_bytes = cpu_encoded_bytes(t, c.cols);
  const int64_t rows_per_group = c.out / c.groups;

  // The CPU reference of every (slot, output row), shared by the layouts and paths below.
  std::vector<RefDot> refs(static_cast<size_t>(c.n_slots * c.out));
  for (int64_t j = 0; j < c.n_slots; ++j) {
    const int64_t e = c.experts.empty() ? 0 : c.experts[static_cast<size_t>(j)];
    const int64_t r = c.rows.empty() ? j : c.rows[static_cast<size_t>(j)];
    for (int64_t o = 0; o < c.out; ++o) {
      const uint8_t* wrow = w.data() + (e * c.out + o) * row_bytes;
      const uint8_t* xrow = enc.data() + r * enc_bytes + (o / rows_per_group) * group_bytes;
      refs[static_cast<size_t>(j * c.out + o)] = cpu_dot(t, wrow, xrow, c.cols);
    }
  }

  // The native layout and the planar decode kernels (planar_sums_reordered) add the block terms in
  // another order (tolerance); the planar tile and tensor-core kernels must reproduce the
  // reference bit for bit.
  // split: hand launch_matmul the scratch its F16/F32 tiles may split their rows' values into.
  auto check_layout = [&](bool planar, bool grouped, PlanarPath path, bool split = false) {
    const std::string tag = what + (planar ? " planar " : "") + (planar ? path_name(path) : "") +
                            (grouped ? " grouped" : "") + (split ? " with split scratch" : "");
    DeviceBuffer dpacked(planar ? w.size() : 1);
    Weight wt;
    wt.data = dw.get();
    wt.type = t;
    wt.ne = {c.cols, c.out, c.n_mat};
    if (planar) {
      const int64_t n_blocks = static_cast<int64_t>(w.size()) / gguf::block_bytes(t);
      launch_pack_planar(t, dw.get(), n_blocks, dpacked.get(), nullptr);
      wt.data = dpacked.get();
      wt.layout = kLayoutPlanar;
    }
    DeviceBuffer dy(static_cast<size_t>(c.n_slots * y_stride) * sizeof(float));
    dy.fill(0xff);  // NaN everywhere: an unwritten output cannot pass
    DeviceBuffer dgroups(grouped ? slot_groups_bytes(c.n_slots, c.n_mat) : 1);
    SlotGroups by_expert;
    if (grouped) {
      by_expert = launch_group_slots(dexperts.get<int32_t>(), c.n_slots, static_cast<int>(c.n_mat),
                                     dgroups.get(), nullptr);
    }
    const int64_t split_bytes =
        split ? matmul_split_bytes(wt, c.n_slots, c.groups, !c.experts.empty()) : 0;
    DeviceBuffer dsplit(static_cast<size_t>(std::max<int64_t>(split_bytes, 1)));
    launch_matmul(wt, enc_for_matmul, enc_row_bytes,
                  c.experts.empty() ? nullptr : dexperts.get<int32_t>(),
                  c.rows.empty() ? nullptr : drows.get<int32_t>(), c.n_slots, c.groups,
                  dy.get<float>(), y_stride, nullptr, grouped ? &by_expert : nullptr, path,
                  split_bytes > 0 ? dsplit.get() : nullptr);
    DS4_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> y(static_cast<size_t>(c.n_slots * y_stride));
    dy.download(y.data(), y.size() * sizeof(float));

    const bool exact = planar && !planar_sums_reordered(wt, c.n_slots, c.groups, !c.experts.empty(),
                                                        grouped, path);
    int64_t bad = 0;
    double worst = 0.0;  // largest |gpu - cpu| / S seen
    for (int64_t j = 0; j < c.n_slots; ++j) {
      for (int64_t o = 0; o < c.out; ++o) {
        const RefDot& ref = refs[static_cast<size_t>(j * c.out + o)];
        const float got = y[static_cast<size_t>(j * y_stride + o)];
        const double err = std::fabs(static_cast<double>(got) - ref.value);
        const double tol = exact ? 0.0 : kReorderTol * ref.scale + kTolFloor;
        if (ref.scale > 0.0) worst = std::max(worst, err / ref.scale);
        const bool ok = exact ? std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(ref.value)
                              : std::isfinite(got) && err <= tol;
        if (ok) continue;
        if (bad++ < kMaxReports) {
          std::printf("  %s: slot %lld row %lld: gpu %.9g cpu %.9g (|diff| %.3g, tol %.3g)\n",
                      tag.c_str(), static_cast<long long>(j), static_cast<long long>(o), got,
                      ref.value, err, tol);
        }
      }
      for (int64_t o = c.out; o < y_stride; ++o) {  // the gap between slots stays untouched
        const uint32_t bits = std::bit_cast<uint32_t>(y[static_cast<size_t>(j * y_stride + o)]);
        if (bits != 0xffffffffu && bad++ < kMaxReports)
          std::printf("  %s: slot %lld wrote past row %lld\n", tag.c_str(),
                      static_cast<long long>(j), static_cast<long long>(c.out));
      }
    }
    EXPECT_EQ(bad, 0) << tag << ": outputs differ from the CPU reference";
    std::printf("  %-8s %-28s %-17s %-6s max |gpu - cpu| / S = %.2e\n",
                std::string(gguf::to_string(t)).c_str(), c.name,
                grouped ? "planar, by expert"
                        : (planar ? "planar" : (split_bytes > 0 ? "native, split" : "native")),
                planar ? path_name(path) : "", worst);
  };
  check_layout(false, false, PlanarPath::kAuto);
  if (t == GgufType::kF16 || t == GgufType::kF32)
    check_layout(false, false, PlanarPath::kAuto, true);
  if (has_planar_layout(t)) {
    Weight shape;
    shape.type = t;
    shape.ne = {c.cols, c.out, c.n_mat};
    const bool experts = !c.experts.empty();
    if (c.wants_imma && (t == GgufType::kQ8_0 || t == GgufType::kQ2_K || t == GgufType::kIQ2_XXS)) {
      EXPECT_TRUE(planar_uses_imma(shape, c.n_slots, c.groups, experts, experts, PlanarPath::kAuto))
          << what << ": the default path should take the tensor-core kernel";
    }
    if (t == GgufType::kQ8_0) {
      EXPECT_EQ(planar_uses_q8_mma(shape, c.n_slots, c.groups, experts, false, PlanarPath::kAuto),
                c.wants_q8mma)
          << what << ": the default path's choice of the decode tensor-core kernel";
    }
    for (PlanarPath path :
         {PlanarPath::kAuto, PlanarPath::kScalar, PlanarPath::kImma, PlanarPath::kQ8Mma}) {
      check_layout(true, false, path);
      if (experts) check_layout(true, true, path);
    }
  }
}

// Sizes: a single row and slot; odd row counts; several slots with a row map; groups = 2 with a
// padded encoded-row stride; a 3-D expert stack with an experts/rows mapping (with and without
// groups); a wide row; random valid blocks. Then prefill sizes, where the default path takes the
// tensor-core kernel: 64, 200 and 512 slots (output rows not a multiple of its 64-row tiles, a row
// map, row groups of 128 rows, and of 64 rows, where Q8_0 keeps one row tile per warp), random
// blocks with 96 slots, 96 slots of 64 long rows (F16/F32 tiles split the rows' values among CTAs
// when given scratch), 640 slots of 1800 rows (F16/F32 on 128-row tiles), and an expert stack of
// 300 slots whose experts hold 150, 75 (three CTAs of 32), 33, 32, 8, 1, 1 and no slots.
// col_sizes are per-type row lengths, smallest first (Q8_0's are multiples of its kernel's 8-block
// chunks and not).
void run_all_cases(GgufType t, const int64_t (&col_sizes)[4]) {
  const uint32_t seed = fresh_seed();
  std::printf("  %s: seed %u\n", std::string(gguf::to_string(t)).c_str(), seed);
  const bool blocks = t != GgufType::kF32 && t != GgufType::kF16;
  std::vector<int32_t> many_experts, many_rows;  // 40 slots: expert 0 has 23, expert 3 none
  for (int j = 0; j < 40; ++j) {
    many_experts.push_back(j % 2 == 0 || j % 7 == 0 ? 0 : (j % 3 == 0 ? 2 : 1));
    many_rows.push_back(j % 5);
  }
  std::vector<int32_t> row_map_200;  // 200 slots over 50 encoded rows, out of order
  for (int j = 0; j < 200; ++j) row_map_200.push_back((j * 7 + 3) % 50);
  // 300 slots over 8 experts: 75, 1, 0, 33, 32, 1, 8 (the rest), 150 slots; interleaved so the
  // grouping has to sort them. Rows: 64 encoded rows, each read by several slots.
  std::vector<int32_t> stack_experts, stack_rows;
  {
    const int counts[8] = {75, 1, 0, 33, 32, 1, 8, 150};
    std::vector<int32_t> pool;
    for (int e = 0; e < 8; ++e)
      for (int k = 0; k < counts[e]; ++k) pool.push_back(e);
    std::mt19937 shuffle_rng(1234);
    std::shuffle(pool.begin(), pool.end(), shuffle_rng);
    stack_experts = pool;
    for (size_t j = 0; j < pool.size(); ++j) stack_rows.push_back(static_cast<int32_t>(j * 5 % 64));
  }
  const std::vector<Case> cases = {
      {.name = "single row", .cols = col_sizes[0], .out = 1, .n_slots = 1, .n_enc_rows = 1},
      {.name = "odd rows, 5 slots", .cols = col_sizes[1], .out = 37, .n_slots = 5, .n_enc_rows = 5},
      {.name = "row map",
       .cols = col_sizes[2],
       .out = 19,
       .n_slots = 4,
       .n_enc_rows = 3,
       .rows = {2, 0, 2, 1}},
      {.name = "groups 2, padded enc",
       .cols = col_sizes[1],
       .out = 18,
       .n_slots = 3,
       .n_enc_rows = 3,
       .groups = 2,
       .enc_pad = 8},
      {.name = "expert stack",
       .cols = col_sizes[1],
       .out = 13,
       .n_slots = 7,
       .n_enc_rows = 3,
       .n_mat = 5,
       .experts = {4, 0, 2, 2, 1, 3, 4},
       .rows = {0, 0, 1, 2, 2, 1, 0}},
      {.name = "expert stack, groups 2",
       .cols = col_sizes[0],
       .out = 10,
       .n_slots = 2,
       .n_enc_rows = 2,
       .groups = 2,
       .n_mat = 3,
       .experts = {2, 1},
       .rows = {1, 0}},
      {.name = "wide", .cols = col_sizes[3], .out = 33, .n_slots = 2, .n_enc_rows = 2},
      {.name = "many slots per expert",
       .cols = col_sizes[1],
       .out = 21,
       .n_slots = 40,
       .n_enc_rows = 5,
       .n_mat = 4,
       .experts = many_experts,
       .rows = many_rows},
      {.name = "random blocks",
       .cols = col_sizes[2],
       .out = 21,
       .n_slots = 3,
       .n_enc_rows = 2,
       .n_mat = 2,
       .experts = {1, 0, 1},
       .rows = {1, 1, 0},
       .random_blocks = blocks},
      // One slot (decode): the planar types take the lanes-per-row kernel, with 8, 16 or 32
      // lanes by row length, partial rounds and rows past the last CTA's end.
      {.name = "one slot, wide", .cols = col_sizes[3], .out = 37, .n_slots = 1, .n_enc_rows = 1},
      {.name = "one slot, many rows",
       .cols = col_sizes[1],
       .out = 300,
       .n_slots = 1,
       .n_enc_rows = 1},
      {.name = "one slot, groups 2, row map",
       .cols = col_sizes[2],
       .out = 18,
       .n_slots = 1,
       .n_enc_rows = 3,
       .groups = 2,
       .rows = {2}},
      {.name = "expert slots, wide",
       .cols = col_sizes[3],
       .out = 9,
       .n_slots = 6,
       .n_enc_rows = 1,
       .n_mat = 3,
       .experts = {2, 0, 1, 2, 0, 1},
       .rows = {0, 0, 0, 0, 0, 0}},
      // Batched decode steps of a few sessions: the slots kernel, CTAs of up to 8 slots (13: two
      // groups side by side, the second partial; 16 with a row map and groups 2 of 150 rows, which
      // kQ8Mma's 16-row tiles cannot take), or the tensor cores (kImma, kQ8Mma); 6 slots: one
      // group of 8 with two slots unused. Q8_0's default path takes kQ8Mma from 8 slots (8: the
      // threshold; 6: below it).
      {.name = "13 slots (batched decode)",
       .cols = col_sizes[3],
       .out = 45,
       .n_slots = 13,
       .n_enc_rows = 13,
       .wants_q8mma = true},
      {.name = "8 slots",
       .cols = col_sizes[2],
       .out = 40,
       .n_slots = 8,
       .n_enc_rows = 8,
       .wants_q8mma = true},
      {.name = "16 slots, groups 2, row map",
       .cols = col_sizes[2],
       .out = 300,
       .n_slots = 16,
       .n_enc_rows = 7,
       .groups = 2,
       .rows = {6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0}},
      {.name = "6 slots", .cols = col_sizes[1], .out = 70, .n_slots = 6, .n_enc_rows = 6},
      // 17-32 slots (kQ8Mma: three and four n8 tiles; a partial last 16-row tile; row groups of
      // 32 rows with a row map).
      {.name = "24 slots, groups 2, row map",
       .cols = col_sizes[2],
       .out = 64,
       .n_slots = 24,
       .n_enc_rows = 5,
       .groups = 2,
       .rows = {4, 3, 2, 1, 0, 4, 3, 2, 1, 0, 4, 3, 2, 1, 0, 4, 3, 2, 1, 0, 4, 3, 2, 1},
       .wants_q8mma = true},
      {.name = "32 slots",
       .cols = col_sizes[3],
       .out = 37,
       .n_slots = 32,
       .n_enc_rows = 32,
       .wants_q8mma = true},
      {.name = "64 slots, groups 2",
       .cols = col_sizes[1],
       .out = 256,
       .n_slots = 64,
       .n_enc_rows = 64,
       .groups = 2,
       .enc_pad = 8,
       .wants_imma = true},
      {.name = "64 slots, groups 2 of 64",  // Q8_0: one row tile per warp (64-row CTAs)
       .cols = col_sizes[1],
       .out = 128,
       .n_slots = 64,
       .n_enc_rows = 64,
       .groups = 2,
       .wants_imma = true},
      {.name = "200 slots, row map",
       .cols = col_sizes[2],
       .out = 70,
       .n_slots = 200,
       .n_enc_rows = 50,
       .rows = row_map_200,
       .wants_imma = true},
      {.name = "512 slots",
       .cols = col_sizes[1],
       .out = 100,
       .n_slots = 512,
       .n_enc_rows = 512,
       .wants_imma = true},
      {.name = "96 slots, random blocks",
       .cols = col_sizes[2],
       .out = 64,
       .n_slots = 96,
       .n_enc_rows = 96,
       .random_blocks = blocks,
       .wants_imma = true},
      {.name = "96 slots, few long rows",
       .cols = col_sizes[3],
       .out = 64,
       .n_slots = 96,
       .n_enc_rows = 96,
       .wants_imma = true},
      {.name = "640 slots, 1800 rows",  // F16/F32: 128-row tiles (enough CTAs for every SM)
       .cols = col_sizes[0],
       .out = 1800,
       .n_slots = 640,
       .n_enc_rows = 640,
       .wants_imma = true},
      {.name = "expert stack, 300 slots",
       .cols = col_sizes[1],
       .out = 96,
       .n_slots = 300,
       .n_enc_rows = 64,
       .n_mat = 8,
       .experts = stack_experts,
       .rows = stack_rows,
       .wants_imma = true},
  };
  for (size_t i = 0; i < cases.size(); ++i) run_case(t, cases[i], seed + static_cast<uint32_t>(i));
}

TEST(CudaMatmulQ, F32) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  run_all_cases(GgufType::kF32, {37, 256, 1000, 4096});
}

TEST(CudaMatmulQ, F16) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  run_all_cases(GgufType::kF16, {37, 256, 1000, 4096});
}

TEST(CudaMatmulQ, Q8_0) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  // 1024 values (32 blocks, whole 8-block chunks, 16-byte aligned rows) take the tensor-core
  // kernel's whole-chunk activation copies in the 200-slot case; 160 and 7200 its word copies.
  run_all_cases(GgufType::kQ8_0, {32, 160, 1024, 7200});
}

// Q2_K and IQ2_XXS: 1024 and 7168 values (4 and 28 blocks) give rows of whole 16-byte units, which
// take the whole-block activation copies; 256 and 768 (1 and 3 blocks) keep the word copies.
TEST(CudaMatmulQ, Q2_K) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  run_all_cases(GgufType::kQ2_K, {256, 768, 1024, 7168});
}

TEST(CudaMatmulQ, Q4_K) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  run_all_cases(GgufType::kQ4_K, {256, 768, 2304, 7168});
}

TEST(CudaMatmulQ, IQ2_XXS) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  run_all_cases(GgufType::kIQ2_XXS, {256, 768, 1024, 7168});
}

// Encoder corner cases, byte for byte against the CPU: all-zero blocks (d = 0), equal largest
// magnitudes of both signs (Q8_K takes the first), exact .5 ties (round half to even), and, on
// x86-64 where the CPU's lrintf yields LONG_MIN for NaN and out-of-range values, subnormal blocks
// (1/d overflows: codes -128), huge values, infinities and NaN.
TEST(CudaMatmulQ, EncodeEdgeCases) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  constexpr int64_t kCols = 512;
  constexpr int64_t kRows = 5;
  std::vector<float> x(static_cast<size_t>(kRows * kCols));
  for (float& v : x) v = normal(rng);
  float* row = x.data();
  for (int i = kCols; i < 2 * kCols; ++i) x[static_cast<size_t>(i)] *= 0.25f;  // row 1: |x| < 3
  for (int i = 0; i < 256; ++i) row[i] = 0.0f;  // row 0: zero first half
  row = x.data() + kCols;                       // row 1: ties of the largest magnitude
  row[5] = -3.0f;
  row[77] = 3.0f;
  row[300] = 3.0f;
  row[400] = -3.0f;
  const float halves[] = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, -126.5f, 3.5f};
  for (int i = 0; i < 10; ++i) row[32 + i] = halves[i];  // block 1: d = 1, exact ties
  row = x.data() + 2 * kCols;                            // row 2: large but finite
  for (int i = 0; i < kCols; ++i) row[i] *= 1e37f;
#if defined(__x86_64__)
  row = x.data() + 3 * kCols;  // row 3: subnormal blocks, and a block of zeros and subnormals
  for (int i = 0; i < kCols; ++i) row[i] *= (i < 256 ? 1e-39f : 1e-44f);
  for (int i = 40; i < 64; i += 2) row[i] = 0.0f;
  row = x.data() + 4 * kCols;  // row 4: inf, -inf and NaN
  row[3] = std::numeric_limits<float>::infinity();
  row[64] = -std::numeric_limits<float>::infinity();
  row[65] = std::numeric_limits<float>::quiet_NaN();
  row[300] = std::numeric_limits<float>::quiet_NaN();
  row[301] = 3e38f;
#endif
  const DeviceBuffer dx = to_device(x);
  for (GgufType t : {GgufType::kQ8_0, GgufType::kQ4_K}) {
    DeviceBuffer denc(static_cast<size_t>(kRows * cpu_encoded_bytes(t, kCols)));
    denc.fill(0xa5);
    check_encode(
        t, x, kRows, kCols, kCols, dx, denc,
        std::string("edge ") + std::string(gguf::to_string(t)) + " seed " + std::to_string(seed));
  }
}

// launch_matmul_parts: weights of one type against the same encoded rows, in one launch, give
// what launch_matmul gives for each of them alone, bit for bit, and nothing else is written; a
// shape no parts kernel takes is refused with nothing launched. F16: the F16 rows kernel (its
// warps per row chosen per part); F32: matrices of few rows (the CTA-per-row kernel); planar
// Q8_0 / Q2_K / IQ2_XXS (8 and 32 lanes per row): one slot, and the gate / up pair of an expert
// stack with expert slots.
// n slots' experts, slot j of expert (5 j + 3) % n_mat: every expert used when n >= n_mat.
// launch_encode_swiglu_rows writes the bytes of launch_swiglu then launch_encode_rows, for Q8_0
// and Q8_K activations, with and without routing weights; values past the clamps (|g|, |u| >
// 10) included.
TEST(CudaMatmulQ, SwigluEncodingEqualsTheSwigluThenItsEncoding) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  constexpr int64_t kRows = 7, kCols = 2048;
  std::vector<float> g(kRows * kCols), u(kRows * kCols), w(kRows);
  for (float& v : g) v = normal(rng);
  for (float& v : u) v = normal(rng);
  for (float& v : w) v = std::fabs(normal(rng));
  const DeviceBuffer dg = to_device(g), du = to_device(u), dw = to_device(w);
  for (GgufType t : {GgufType::kQ8_0, GgufType::kQ2_K}) {
    for (const bool weighted : {false, true}) {
      const std::string what = std::string(gguf::to_string(t)) + (weighted ? " weighted" : "") +
                               " seed " + std::to_string(seed);
      const float* weights = weighted ? dw.get<float>() : nullptr;
      const size_t bytes = static_cast<size_t>(kRows * encoded_row_bytes(t, kCols));
      DeviceBuffer dv(sizeof(float) * g.size()), a(bytes), b(bytes);
      a.fill(0x5a);
      b.fill(0xa5);
      launch_swiglu(dg.get<float>(), du.get<float>(), weights, kRows, kCols, dv.get<float>(),
                    nullptr);
      launch_encode_rows(t, dv.get<float>(), kRows, kCols, kCols, a.get(), nullptr);
      launch_encode_swiglu_rows(t, dg.get<float>(), du.get<float>(), weights, kRows, kCols, b.get(),
                                nullptr);
      DS4_CUDA_CHECK(cudaDeviceSynchronize());
      std::vector<uint8_t> ha(bytes), hb(bytes);
      a.download(ha.data(), bytes);
      b.download(hb.data(), bytes);
      EXPECT_EQ(std::memcmp(ha.data(), hb.data(), bytes), 0) << what << ": encodings differ";
    }
  }
}

}  // namespace
}  // namespace ds4::backend::cuda
