// src/backend/cuda/kernels/matmul_q.cuh: weight-row . activation-row products on the device for
// every stored weight type, mirroring the CPU reference (quant/activation.cpp, quant/dot_ref.cpp):
// activations are encoded exactly as on the CPU (Q8_0 blocks with a float scale for Q8_0 weights,
// Q8_K blocks for Q2_K / Q4_K / IQ2_XXS, plain floats for F16 / F32 weights), integer block sums
// are exact, and only the order in which per-block float terms are added differs from the CPU.
// Owns: the dot kernels and their launchers (grid maths lives in launchers); the encoders are
// encode_q.cuh's (included here).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <span>

#include "backend/backend.h"
#include "backend/cuda/kernels/encode_q.cuh"
#include "backend/cuda/kernels/matmul_planar.cuh"

namespace ds4::backend::cuda {

// For each slot j < n_slots and output row o < w.ne[1]:
//   y[j * y_stride + o] = dot(matrix e_j of w, row o ; encoded row r_j, elements
//                             [g * w.ne[0], (g + 1) * w.ne[0]) with g = o / (w.ne[1] / groups))
// where e_j = experts[j] (experts == nullptr: 0) and r_j = rows[j] (rows == nullptr: j); experts
// and rows are device arrays. `enc` holds encoded rows of enc_row_bytes each (an encoded row may
// span several groups). w.data is device memory; w.ne = {cols, out, n_matrices}. Weights in the
// planar layout (w.layout == kLayoutPlanar, matmul_planar.cuh) go to launch_matmul_planar.
// by_expert (optional, from launch_group_slots over the same experts) lets planar weights visit
// the slots by expert, and `path` picks the planar kernel (matmul_planar.cuh); the results do not
// change.
// split_scratch (optional, device, matmul_split_bytes(w, n_slots, groups, experts != nullptr)
// bytes) lets F16/F32 products of few output rows split their rows' values among more CTAs (the
// parts' double sums added in order, then rounded once: the same contract).
void launch_matmul(const Weight& w, const void* enc, int64_t enc_row_bytes, const int32_t* experts,
                   const int32_t* rows, int64_t n_slots, int groups, float* y, int64_t y_stride,
                   cudaStream_t stream, const SlotGroups* by_expert = nullptr,
                   PlanarPath path = PlanarPath::kAuto, void* split_scratch = nullptr);

// The products of w[0..n) (n <= kMaxParts; one type, layout and row width, one output group each)
// with the same encoded activations, as launch_matmul would run each (y[p] for w[p]; experts,
// rows, n_slots and y_stride shared), in one launch where a kernel takes parts: the F16 rows
// kernel (matmul_f16_rows.cuh; no experts, fewer slots than the float tiles), the F32 CTA-per-row
// kernel (one slot) and the planar rows kernel (one slot, or expert slots without groups). Returns
// false, with nothing launched, where neither applies: the caller then runs them one by one. The
// results are those of the separate launches, bit for bit.
bool launch_matmul_parts(std::span<const Weight* const> w, std::span<float* const> y,
                         const void* enc, int64_t enc_row_bytes, const int32_t* experts,
                         const int32_t* rows, int64_t n_slots, int64_t y_stride,
                         cudaStream_t stream);
// Device scratch bytes launch_matmul can use for this product (0: it splits nothing).
int64_t matmul_split_bytes(const Weight& w, int64_t n_slots, int groups, bool experts);

}  // namespace ds4::backend::cuda
