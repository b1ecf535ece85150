// src/backend/cuda/kernels/iq2_tables.cuh: device copies of the IQ2_XXS codebook and sign table.
// Owns: nothing but their placement. The values come from the same generated quant/iq2_tables.inc
//   the CPU reads (never copied by hand), included here with device storage.
// Does not own: the table values (tools/gen/gen_iq2_tables.py) or their use (matmul_q.cu).
//
// The tables live in global memory (read through the read-only cache with __ldg), not in
// __constant__ memory: every lane of a warp indexes them differently, and the constant cache
// serialises lane-divergent addresses. Internal linkage: each including .cu has its own copy
// (a few KiB).
#pragma once

#include <cstdint>

namespace ds4::backend::cuda::iq2 {

#undef DS4_IQ2_TABLE_STORAGE
#define DS4_IQ2_TABLE_STORAGE static __device__ const
#include "quant/iq2_tables.inc"
#undef DS4_IQ2_TABLE_STORAGE

}  // namespace ds4::backend::cuda::iq2
