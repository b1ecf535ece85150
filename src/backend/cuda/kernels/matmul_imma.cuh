// src/backend/cuda/kernels/matmul_imma.cuh: the tensor-core kernel for products of planar weights
// (matmul_planar.cuh) with many activation rows (prefill): integer block sums from int8 mma.sync
// with int32 accumulation, float terms formed and added exactly as the planar kernel and the CPU
// reference do (quant/dot_ref.cpp), so the results are bit-identical to both.
//
// A CTA owns kImmaRows consecutive output rows of one matrix and up to kImmaSlots slots: every
// slot of a dense product (matrix 0), or one wide group of an expert's slots (SlotGroups). It
// walks the weight rows' blocks in order; each thread owns some (row, slot) outputs (the C
// fragment elements of its warp's products), and after a block's integer sums are complete it
// forms that block's float term for each of them and adds it to the output's accumulator, so every
// output adds its terms in block order, as the reference does.
// Owns: the kernel and its launcher. Does not own: the planar layout or the kernel choice
// (matmul_planar.cuh), the int8 decodes and fragment addressing (imma_formats.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/kernels/matmul_planar.cuh"
#include "gguf/types.h"

namespace ds4::backend::cuda {

// Output rows per CTA; products with output row groups need groups of a multiple of this.
inline constexpr int kImmaRows = 64;

// True for the weight types the kernel multiplies (Q8_0, Q2_K, IQ2_XXS).
bool imma_has_format(gguf::GgufType t);

// One product, as launch_matmul_planar hands it over (device pointers).
struct ImmaProduct {
  gguf::GgufType type = gguf::GgufType::kQ8_0;
  const uint8_t* body = nullptr;  // the planar body plane of the whole stack
  const uint8_t* aux = nullptr;   // the planar aux plane
  int64_t mat_rows = 0;           // output rows per matrix
  int n_matrices = 0;
  int nb = 0;              // blocks per weight row
  int rows_per_group = 0;  // output rows per encoded group (a multiple of kImmaRows, or all)
  const uint8_t* enc = nullptr;
  int64_t enc_row_bytes = 0;
  int64_t enc_group_bytes = 0;    // one group's share of an encoded row
  const int32_t* rows = nullptr;  // nullptr: slot j reads encoded row j
  int n_slots = 0;
  SlotGroups groups;  // order == nullptr: every slot multiplies matrix 0
  float* y = nullptr;
  int64_t y_stride = 0;
};

// y[j * y_stride + o] for every slot j and output row o (launch_matmul's contract).
void launch_matmul_imma(const ImmaProduct& p, cudaStream_t stream);

}  // namespace ds4::backend::cuda
