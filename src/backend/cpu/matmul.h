// src/backend/cpu/matmul.h: weight-row . activation-row products for every stored weight type.
// Owns: encoding activation rows once per op into the format a weight type's dot product needs
// (Q8_0 blocks for Q8_0 weights, Q8_K for K-quants and IQ2_XXS, raw floats for F16/F32), and the
// row-blocked, thread-parallel matmul. Every output element is one call of the same dot kernel,
// so results do not depend on the batch size or the thread count (a multi-row kernel call gives
// each row the single-row result, bit for bit).
// Does not own: the kernels (quant/dot.h).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "base/thread_pool.h"
#include "quant/blocks.h"
#include "quant/dot.h"

namespace ds4::backend::cpu {

int64_t row_bytes(gguf::GgufType t, int64_t cols);

// Activation rows encoded for one weight type. Reuses its storage across calls.
class EncodedRows {
 public:
  // Encodes `rows` rows of `cols` floats starting at x, consecutive rows `stride` floats apart.
  void encode(gguf::GgufType t, const float* x, int64_t rows, int64_t cols, int64_t stride);
  // out[i] = the dot of weight row i (of `n` values) with elements [offset, offset + n) of
  // encoded row r, for the n_w weight rows stored back to back from w: one single-row kernel
  // call per row, or for the 256-value formats one multi-row call (the same results, bit for bit).
  void dot_rows(const quant::DotKernels& k, const void* w, int64_t n_w, int64_t r, int64_t offset,
                int64_t n, float* out) const;

 private:
  gguf::GgufType type_ = gguf::GgufType::kF32;
  int64_t cols_ = 0;
  int64_t stride_ = 0;
  const float* floats_ = nullptr;
  std::vector<quant::ActQ8_0> q8_;
  std::vector<quant::BlockQ8_K> qk_;
};

// y[r][o] = W row o . x[r] (slice g of x[r] for the rows of group g). Parallel over weight rows.
void matmul(base::ThreadPool& pool, const quant::DotKernels& k, const Weight& w,
            const EncodedRows& x, int64_t n_rows, int groups, Act y);

}  // namespace ds4::backend::cpu
