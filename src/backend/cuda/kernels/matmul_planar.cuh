// src/backend/cuda/kernels/matmul_planar.cuh: the planar device layout of block-quantized weights
// and the matrix kernel that reads it. Each GGUF block is split, at upload, into a 16-byte
// aligned "body" (the codes, plus the sub-block scales for Q2_K) and a small "aux" part (the f16
// scales), each stored as its own plane, so a thread reads its block with 16-byte loads.
// Q4_K blocks (144 bytes, already aligned) are kept whole as the body, with no aux plane.
//
// Every block term equals the CPU reference's (quant/dot_ref.cpp): integer block sums are exact and
// every term is formed with the reference's float operations. The tile kernel (slots grouped by
// expert, or more slots than the slots kernel takes) adds each output's terms in block order on
// one thread, so it is bit-identical to the reference, as is the tensor-core kernel over the same
// layout (matmul_imma.cuh, prefill). The decode kernels (rows: one slot per CTA; slots: 2-16
// slots of one matrix) sum each lane's blocks and then the lanes by a butterfly: the same terms
// in another order (planar_sums_reordered; a tolerance in matmul_q_test.cpp).
// Owns: the planar layout (plane sizes and offsets), the pack kernel, slot grouping (its kernels
// in slot_groups.cu) and the planar matmul launcher (which picks the kernel). Does not own:
// activation encoding (matmul_q.cuh), the tensor-core kernel (matmul_imma.cuh) or the block layouts
// (quant/blocks.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <span>

#include "backend/backend.h"

namespace ds4::backend::cuda {

// Weight::layout value of a tensor stored in the planar layout.
inline constexpr uint8_t kLayoutPlanar = 1;

// True for the block types that have a planar layout (Q8_0, Q2_K, Q4_K, IQ2_XXS).
bool has_planar_layout(gguf::GgufType t);

// Rewrites n_blocks consecutive GGUF blocks of type t (device memory, src) in the planar layout
// into dst (device memory, the same number of bytes, 16-byte aligned, not overlapping src).
void launch_pack_planar(gguf::GgufType t, const void* src, int64_t n_blocks, void* dst,
                        cudaStream_t stream);

// Slots per group of the tensor-core kernel's CTAs (wide groups below; matmul_imma.cu).
inline constexpr int kImmaSlots = 32;
// Slots per group of the planar tile kernel's CTAs (groups below; matmul_planar.cu).
inline constexpr int kPlanarGroupSlots = 8;

// The slots of an expert-stack product grouped by expert, so one CTA reads an expert's weights
// once for several of its slots (prefill). Device arrays, built by launch_group_slots. An expert's
// slots are cut into groups of 8 (the planar kernel's CTAs) and, for the tensor-core kernel, into
// wide groups of kImmaSlots, both in `order`.
struct SlotGroups {
  const int32_t* order = nullptr;        // slot ids sorted by expert
  const int32_t* first = nullptr;        // [n_matrices + 1]: each expert's start in `order`
  const int32_t* group_first = nullptr;  // [n_matrices + 1]: each expert's first group
  const int32_t* wide_first = nullptr;   // [n_matrices + 1]: each expert's first wide group
  int max_groups = 0;                    // an upper bound of the number of groups
  int max_wide_groups = 0;               // an upper bound of the number of wide groups
};

// Which kernel runs a planar product. kAuto: Q8_0 products of one matrix of 8-32 slots on the
// decode tensor-core kernel (matmul_q8_mma.cuh), else the tensor-core kernel (matmul_imma.cuh)
// when it can and a CTA gets many slots, the planar kernel otherwise; kScalar: always the planar
// kernel (tests, to compare them); kImma: the tensor-core kernel whenever it can (tests); kQ8Mma:
// the decode tensor-core kernel whenever it can (from 2 slots), else as kAuto (tests). The
// results agree within the decode kernels' tolerance (planar_sums_reordered).
enum class PlanarPath : uint8_t { kAuto, kScalar, kImma, kQ8Mma };

// Several products of one weight type, layout and row width that read the same activations, in
// one launch (a decode step's products of one input: attention q_a and kv, the compressor and
// indexer projections, an FFN's gate and up). Part p: its weights at w[p] (planar: the body
// plane, its aux plane at aux[p]), out[p] output rows per matrix, its results at y[p]; the
// kernel's CTAs first[p] .. first[p + 1] - 1 along the grid's x compute it (the launchers fill
// first). Each output is computed as in a launch of its own, bit for bit.
inline constexpr int kMaxParts = 5;
struct ProductParts {
  int n = 0;  // 0: the launch's own weight only
  int first[kMaxParts + 1] = {};
  const uint8_t* w[kMaxParts] = {};
  const uint8_t* aux[kMaxParts] = {};
  float* y[kMaxParts] = {};
  int out[kMaxParts] = {};
};

// Whether launch_matmul_planar runs a product (n_slots slots, `groups` output row groups; with
// experts, grouped by expert or not) on the tensor-core kernel. It can for Q8_0, Q2_K and IQ2_XXS
// weights, products without experts or grouped by expert, and row groups of a multiple of its
// tile rows; kAuto takes it from 17 slots without experts (from 2 to 16, the slots kernel reads
// the weights once for up to 8 of them), and with experts from 16 slots and at least as many
// slots as matrices.
bool planar_uses_imma(const Weight& w, int64_t n_slots, int groups, bool experts, bool grouped,
                      PlanarPath path);
// Whether such a product may take the decode tensor-core kernel (matmul_q8_mma.cuh): Q8_0
// weights, one matrix, row groups of a multiple of 16 rows, 2-32 slots with kQ8Mma, 8-32 with
// kAuto (matmul_planar.cu, kQ8MmaMinSlots: fewer are faster on the slots kernel);
// launch_matmul_planar also checks the activations' alignment. It then takes precedence over the
// tensor-core kernel.
bool planar_uses_q8_mma(const Weight& w, int64_t n_slots, int groups, bool experts, bool grouped,
                        PlanarPath path);
// Whether launch_matmul_planar with these arguments (and not on the tensor cores) takes a decode
// kernel, whose sums are in another order than the reference's (above).
bool planar_sums_reordered(const Weight& w, int64_t n_slots, int groups, bool experts, bool grouped,
                           PlanarPath path);

// Passes of the rows kernel per CTA (each pass kernel threads / lanes output rows of one slot)
// for a product of w with n_slots slots, one matrix or expert slots without groups: more than 1
// only where the launch keeps about a wave of CTAs (matmul_planar.cu). A row's sum is the same
// at any number of passes.
int planar_rows_passes(const Weight& w, int64_t n_slots);

// The expert whose groups contain group g, given each expert's first group (group_first[e],
// non-decreasing, n_matrices + 1 entries, g < group_first[n_matrices]): a binary search.
__host__ __device__ inline int group_expert(const int32_t* group_first, int n_matrices, int g) {
  int lo = 0, hi = n_matrices - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (group_first[mid] <= g) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// Device scratch bytes launch_group_slots needs.
int64_t slot_groups_bytes(int64_t n_slots, int n_matrices);
// Groups n_slots slots whose experts (device, each in [0, n_matrices)) are given; the returned
// arrays live in `scratch` and are valid for kernels queued after this call.
SlotGroups launch_group_slots(const int32_t* experts, int64_t n_slots, int n_matrices,
                              void* scratch, cudaStream_t stream);

// launch_matmul's contract (matmul_q.cuh) for a weight in the planar layout; with
// `groups_by_expert` (from the same experts), slots are visited by expert group; `path` picks the
// kernel (planar_uses_imma, planar_sums_reordered).
void launch_matmul_planar(const Weight& w, const void* enc, int64_t enc_row_bytes,
                          const int32_t* experts, const int32_t* rows, int64_t n_slots, int groups,
                          float* y, int64_t y_stride, cudaStream_t stream,
                          const SlotGroups* groups_by_expert = nullptr,
                          PlanarPath path = PlanarPath::kAuto);

// The products of w[0..n) (planar, one type and row width, one output group each) with one
// encoded activation row (experts == nullptr: n_slots == 1) or with the n_slots expert slots
// (experts[j], rows[j] as launch_matmul_planar's, no slot groups), on the rows kernel in one
// launch: y[p][j * y_stride + o]. False, with nothing launched, where launch_matmul_planar would
// not take the rows kernel for them (the caller then runs them one by one).
bool launch_matmul_planar_parts(std::span<const Weight* const> w, std::span<float* const> y,
                                const void* enc, int64_t enc_row_bytes, const int32_t* experts,
                                const int32_t* rows, int64_t n_slots, int64_t y_stride,
                                cudaStream_t stream);

}  // namespace ds4::backend::cuda
