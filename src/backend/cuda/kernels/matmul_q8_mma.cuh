// src/backend/cuda/kernels/matmul_q8_mma.cuh: Q8_0 planar weights against 2-32 activation rows
// (a batched decode step of several sessions) on the int8 tensor cores, shaped for decode: CTAs
// of 16 output rows and a range of the rows' blocks, a cluster of them per 16 rows where the
// rows alone would leave SMs idle, four warps splitting each CTA's blocks (matmul_q8_mma.cu). The
// slots kernel (matmul_planar.cu) issues eight dp4a per block and slot and reads the weights once
// per 8 slots; here one mma.m16n8k32 forms 16 rows x 8 slots of a block's integer sums. Each output
// adds its block terms (Q8_0: one fma each, planar::add_term) per warp in block order, then the
// four warps' sums in warp order, then the cluster's CTAs' sums in rank order: the reference's
// terms in another order (a tolerance, like the other decode kernels), the same for a slot
// whatever the other slots are (the split depends only on the weights' shape).
// Owns: the kernel and its launch conditions. Does not own: the planar layout or the encodings.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ds4::backend::cuda {

// One product: Q8_0 weights in the planar layout (body and aux planes of one matrix, out rows of
// nb blocks), the activation rows encoded as ActQ8_0 blocks (slot j reads row rows[j], or j
// without rows; output row o reads the row group o / rows_per_group, enc_group_bytes apart),
// results at y + j * y_stride + o.
struct Q8MmaProduct {
  const uint8_t* body = nullptr;
  const uint8_t* aux = nullptr;
  int out = 0;
  int nb = 0;
  int rows_per_group = 0;
  const uint8_t* enc = nullptr;
  int64_t enc_row_bytes = 0;
  int64_t enc_group_bytes = 0;
  const int32_t* rows = nullptr;
  int n_slots = 0;
  float* y = nullptr;
  int64_t y_stride = 0;
};

// The most slots one launch takes.
inline constexpr int kQ8MmaMaxSlots = 32;

// Whether the kernel can run p: 2 <= n_slots <= kQ8MmaMaxSlots, a row group a multiple of the
// CTA's 16 rows (or one group), 4-byte aligned activation rows.
bool q8_mma_fits(const Q8MmaProduct& p);

void launch_matmul_q8_mma(const Q8MmaProduct& p, cudaStream_t stream);

}  // namespace ds4::backend::cuda
