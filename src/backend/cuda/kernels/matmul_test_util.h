// src/backend/cuda/kernels/matmul_test_util.h: what the device matmul tests (matmul_q_test.cpp,
// matmul_slots_test.cpp) share: a product's configuration and its weights made on the host, the
// weights on the device (packed into the planar layout where the type has one), activation rows
// encoded on the device, and a spread of expert slots.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/kernels/kernel_test.h"
#include "backend/cuda/kernels/matmul_planar.cuh"
#include "backend/cuda/kernels/matmul_q.cuh"
#include "gguf/types.h"
#include "quant/quant_test_util.h"
#include "quant/quantize.h"

namespace ds4::backend::cuda::test {

// One matmul configuration. cols is per group; the encoded rows hold groups * cols values.
struct Case {
  const char* name;
  int64_t cols;
  int64_t out;
  int64_t n_slots;
  int64_t n_enc_rows;
  int groups = 1;
  int64_t n_mat = 1;
  std::vector<int32_t> experts;  // empty: nullptr (matrix 0)
  std::vector<int32_t> rows;     // empty: nullptr (slot j reads encoded row j)
  int64_t enc_pad = 0;           // extra bytes between encoded rows handed to matmul
  bool random_blocks = false;    // random valid blocks instead of quantize_rows output
  bool wants_imma = false;       // the default path must take the tensor-core kernel, when the
                                 // type has one (planar_uses_imma)
  bool wants_q8mma = false;      // Q8_0: the default path must take the decode tensor-core
                                 // kernel (planar_uses_q8_mma), and must not without this
};

// Weights: gaussian rows of varied magnitude through quantize_rows, or random valid blocks
// (every code, scale and sign pattern reachable) for the block formats.
inline std::vector<uint8_t> make_weights(gguf::GgufType t, const Case& c, std::mt19937& rng) {
  const int64_t n_rows = c.n_mat * c.out;
  const int64_t row_bytes =
      static_cast<int64_t>(*gguf::byte_size(t, static_cast<uint64_t>(c.cols)));
  std::vector<uint8_t> w(static_cast<size_t>(n_rows * row_bytes));
  if (c.random_blocks && t != gguf::GgufType::kF32 && t != gguf::GgufType::kF16) {
    const uint32_t block_bytes = gguf::block_bytes(t);
    for (size_t off = 0; off < w.size(); off += block_bytes) {
      uint8_t* dst = w.data() + off;
      if (t == gguf::GgufType::kQ8_0) {
        const quant::BlockQ8_0 b = quant::testing::random_q8_0(rng);
        std::memcpy(dst, &b, sizeof(b));
      } else if (t == gguf::GgufType::kQ2_K) {
        const quant::BlockQ2_K b = quant::testing::random_q2_k(rng);
        std::memcpy(dst, &b, sizeof(b));
      } else if (t == gguf::GgufType::kQ4_K) {
        const quant::BlockQ4_K b = quant::testing::random_q4_k(rng);
        std::memcpy(dst, &b, sizeof(b));
      } else {
        const quant::BlockIQ2_XXS b = quant::testing::random_iq2_xxs(rng);
        std::memcpy(dst, &b, sizeof(b));
      }
    }
    return w;
  }
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> log_scale(-3.0f, 3.0f);
  std::vector<float> src(static_cast<size_t>(n_rows * c.cols));
  for (int64_t r = 0; r < n_rows; ++r) {
    const float s = std::exp(log_scale(rng));
    for (int64_t i = 0; i < c.cols; ++i) src[static_cast<size_t>(r * c.cols + i)] = s * normal(rng);
  }
  const Status st = quant::quantize_rows(t, src.data(), w.data(), n_rows, c.cols, nullptr);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return w;
}

// A weight on the device: its GGUF bytes as stored, and (for a type with a planar layout) packed,
// w naming the copy the kernels read.
struct DeviceWeight {
  DeviceBuffer stored, packed;
  Weight w;
};
inline DeviceWeight device_weight(gguf::GgufType t, const std::vector<uint8_t>& bytes, int64_t cols,
                                  int64_t out, int64_t n_mat) {
  const bool planar = has_planar_layout(t);
  DeviceWeight d{to_device(bytes), DeviceBuffer(planar ? bytes.size() : 0), {}};
  d.w.data = d.stored.get();
  d.w.type = t;
  d.w.ne = {cols, out, n_mat};
  if (planar) {
    launch_pack_planar(t, d.stored.get(), static_cast<int64_t>(bytes.size()) / gguf::block_bytes(t),
                       d.packed.get(), nullptr);
    d.w.data = d.packed.get();
    d.w.layout = kLayoutPlanar;
  }
  return d;
}

// n_rows rows of cols floats encoded on the device for type t's dots (row_bytes apart).
struct DeviceRows {
  DeviceBuffer x, enc;
  int64_t row_bytes;
};
inline DeviceRows encode_on_device(gguf::GgufType t, const std::vector<float>& x, int64_t n_rows,
                                   int64_t cols) {
  const int64_t row_bytes = encoded_row_bytes(t, cols);
  DeviceRows r{to_device(x), DeviceBuffer(static_cast<size_t>(n_rows * row_bytes)), row_bytes};
  launch_encode_rows(t, r.x.get<float>(), n_rows, cols, cols, r.enc.get(), nullptr);
  return r;
}

// n slots spread over n_mat matrices (every matrix once n >= n_mat), not in matrix order.
inline std::vector<int32_t> spread_experts(int n, int n_mat) {
  std::vector<int32_t> e(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) e[static_cast<size_t>(j)] = (5 * j + 3) % n_mat;
  return e;
}

}  // namespace ds4::backend::cuda::test
