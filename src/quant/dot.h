// src/quant/dot.h: dot products between one weight row and one activation row, per format.
// Owns: the DotKernels table (reference = the spec of model.md §3.3; AVX2 and AVX-512 = the fast
//   x86 paths), the one-time choice of the best table for this CPU, and a row-parallel matvec
//   helper.
// Does not own: activation encoding (activation.h), block layouts (blocks.h), or any backend op
//   (backend/cpu composes these kernels into model ops).
//
// Exactness contract of the fast kernels against the reference (tested in dot_test.cpp):
//   q8_0, q2_k, q4_k, iq2_xxs: bit-identical. Integer block sums are exact, and the per-block float
//     terms are formed with the same operations and added in the reference's block order.
//   f16: exact products summed in double, reordered; differs by at most one float rounding.
//   f32: double sum reordered; differs from the reference by at most one float rounding.
// Activation qs must lie in [-127, 127], which quantize_act_q8_0/q8_k guarantee; the AVX2 code
// and AVX-512 code use sign tricks that are exact only in that range.
#pragma once

#include <cstdint>

#include "ds4/status.h"
#include "gguf/types.h"
#include "quant/blocks.h"

namespace ds4::base {
class ThreadPool;
}

namespace ds4::quant {

struct DotKernels {
  const char* name;  // "reference", "avx2", "avx512"
  // Q8_0 weights . Q8_0 activations, n_blocks blocks of 32.
  float (*q8_0)(const BlockQ8_0* w, const ActQ8_0* x, int64_t n_blocks);
  // K-quant / IQ2 weights . Q8_K activations, n_blocks blocks of 256.
  float (*q2_k)(const BlockQ2_K* w, const BlockQ8_K* x, int64_t n_blocks);
  float (*q4_k)(const BlockQ4_K* w, const BlockQ8_K* x, int64_t n_blocks);
  float (*iq2_xxs)(const BlockIQ2_XXS* w, const BlockQ8_K* x, int64_t n_blocks);
  // The same three dots over n_rows rows stored back to back (row r at w + r * n_blocks), all
  // against one activation row: y[r] = the single-row entry's result, bit for bit. The fast tables
  // stream the blocks of all rows through one pipeline, so short rows (the expert products: a
  // row of 2-8 blocks) do not each pay the start-up and reduction of a whole dot.
  void (*q2_k_rows)(const BlockQ2_K* w, const BlockQ8_K* x, int64_t n_blocks, int64_t n_rows,
                    float* y);
  void (*q4_k_rows)(const BlockQ4_K* w, const BlockQ8_K* x, int64_t n_blocks, int64_t n_rows,
                    float* y);
  void (*iq2_xxs_rows)(const BlockIQ2_XXS* w, const BlockQ8_K* x, int64_t n_blocks, int64_t n_rows,
                       float* y);
  // F16 weights (raw bits) . float activations, n values, exact products summed in double.
  float (*f16)(const uint16_t* w, const float* x, int64_t n);
  // F32 weights . float activations, n values, double accumulation.
  float (*f32)(const float* w, const float* x, int64_t n);
};

// The scalar kernels that define the results.
const DotKernels& reference_dot_kernels();
// The AVX2+FMA+F16C kernels, or nullptr when this build or this CPU lacks them.
const DotKernels* avx2_dot_kernels();
// The AVX-512 kernels (F, BW, VL, VNNI, VBMI, BITALG, with OS support for ZMM state; the entries
// they do not vectorise are the AVX2 ones, so AVX2+FMA+F16C too), or nullptr when this build or
// this CPU lacks them.
const DotKernels* avx512_dot_kernels();
// The fastest table this CPU supports (avx512 > avx2 > reference); decided once, on first call.
const DotKernels& best_dot_kernels();

// Reference kernels, callable directly (they are also reference_dot_kernels()'s entries).
float dot_q8_0_ref(const BlockQ8_0* w, const ActQ8_0* x, int64_t n_blocks);
float dot_q2_k_ref(const BlockQ2_K* w, const BlockQ8_K* x, int64_t n_blocks);
float dot_q4_k_ref(const BlockQ4_K* w, const BlockQ8_K* x, int64_t n_blocks);
float dot_iq2_xxs_ref(const BlockIQ2_XXS* w, const BlockQ8_K* x, int64_t n_blocks);
float dot_f16_ref(const uint16_t* w, const float* x, int64_t n);
float dot_f32_ref(const float* w, const float* x, int64_t n);

// A multi-row entry from a single-row dot: one call per row (the tables whose single-row dots have
// no start-up worth streaming across rows: the reference and AVX2).
template <class Block, float (*Dot)(const Block*, const BlockQ8_K*, int64_t)>
void rows_one_by_one(const Block* w, const BlockQ8_K* x, int64_t n_blocks, int64_t n_rows,
                     float* y) {
  for (int64_t r = 0; r < n_rows; ++r) y[r] = Dot(w + r * n_blocks, x, n_blocks);
}

// Rows per parallel task when `rows` output rows are split over `threads` threads: about 8 tasks
// per thread, so handing them out costs little, and at least 16 rows, so each task streams a long
// contiguous run of weights (shorter tasks broke the prefetch streams: bench/cpu-kernels.md).
int64_t rows_per_task(int64_t rows, int threads);

// True when matvec() supports weights of type t (F32, F16, Q8_0, Q2_K, Q4_K, IQ2_XXS).
bool has_dot(gguf::GgufType t);

// y[r] = dot(W row r, x) for r < rows. W is row-major: `rows` rows of `cols` values of type t.
// x is quantised once to the activation format the type's dot needs (ActQ8_0 for Q8_0, Q8_K for
// the 256-blocks). Rows are split over `pool` when given (nullptr = calling thread only).
// Allocates the quantised activation; meant for tools, tests and benchmarks, not the decode loop.
// Errors: unsupported t (unimplemented); cols not a whole number of blocks (invalid_argument).
Status matvec(const DotKernels& k, gguf::GgufType t, const void* w, int64_t rows, int64_t cols,
              const float* x, float* y, base::ThreadPool* pool);

}  // namespace ds4::quant
