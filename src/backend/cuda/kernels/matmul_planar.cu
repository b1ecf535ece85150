// src/backend/cuda/kernels/matmul_planar.cu: the planar weight layout, its pack kernel and the
// matrix kernel over it (contract in matmul_planar.cuh).
//
// Layout of a tensor of R rows (all matrices of a stack, back to back) of nb blocks each:
//   body plane: R * nb * kBody bytes, block (row, b) at (row * nb + b) * kBody;
//   aux plane:  R * nb * kAux bytes, right after the body plane.
// kBody is a multiple of 16 and the plane starts at the (16-byte aligned) allocation, so every
// body is 16-byte aligned; the total size equals the GGUF size.
//
// Tile kernel: a CTA owns 16 consecutive output rows of one matrix and up to kMaxSlots
// activation rows (slots). It walks the row's blocks in chunks of kChunk (half as many for Q8_0,
// whose terms are two floats): every thread computes the terms of some (row, block) items, reading
// each weight block once for all of the CTA's slots, and parks them in shared memory; then one
// thread per (row, slot) adds the chunk's terms to its accumulator in block order
// (planar::add_term: Q8_0 by one fused multiply-add, as dot_ref.cpp). The float terms use
// dot_ref.cpp's expressions (planar_formats.cuh, checked on the host by planar_formats_test),
// integer sums are exact: the result equals the CPU reference bit for bit. Built with -fmad=false.
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "backend/cuda/check.h"
#include "backend/cuda/kernels/iq2_tables.cuh"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/launch_limits.h"
#include "backend/cuda/kernels/matmul_imma.cuh"
#include "backend/cuda/kernels/matmul_planar.cuh"
#include "backend/cuda/kernels/matmul_q8_mma.cuh"
#include "backend/cuda/kernels/planar_formats.cuh"
#include "base/check.h"
#include "quant/blocks.h"

namespace ds4::backend::cuda {
namespace {

using gguf::GgufType;
using planar::FmtIq2Xxs;
using planar::FmtQ2K;
using planar::FmtQ4K;
using planar::FmtQ8_0;
using planar::Iq2Lookup;
using quant::ActQ8_0;
using quant::BlockQ8_K;

constexpr int kThreads = 256;
constexpr int kRows = 16;                     // output rows per CTA of the tile kernel
constexpr int kMaxSlots = kPlanarGroupSlots;  // activation rows per CTA (weights read once)
constexpr int kChunk = 64;                    // blocks per shared-memory round

struct PlanarArgs {
  const uint8_t* body;
  const uint8_t* aux;
  int64_t mat_rows;  // output rows per matrix
  int n_matrices;
  int out;
  int rows_per_group;
  int nb;  // blocks per weight row
  const uint8_t* enc;
  int64_t enc_row_bytes;
  int64_t enc_group_bytes;
  const int32_t* experts;  // nullptr: matrix 0
  const int32_t* rows;     // nullptr: slot j reads encoded row j
  int n_slots;
  int slots_per_cta;  // 1 when experts are given without groups
  SlotGroups groups;  // order == nullptr: slots in index order
  float* y;
  int64_t y_stride;
  bool stage_x;  // the rows / slots kernels: copy the activation rows into shared memory first
  bool slot_groups_in_x;  // planar_slots_kernel: blockIdx.x is the slot group, blockIdx.y the rows
  ProductParts parts;     // planar_rows_kernel: several matrices in one launch (n >= 2)
  int passes = 1;         // planar_rows_kernel: passes of kThreads / lanes rows per CTA
};

// The matrix a rows-kernel CTA works on: the launch's, or its part's (ProductParts), and the
// CTA's index within it. Each part's test is unrolled, so no parameter array is indexed at run
// time (that would copy the parameters to local memory).
struct CtaMatrix {
  const uint8_t* body;
  const uint8_t* aux;
  float* y;
  int64_t mat_rows;
  int out;
  int64_t cta;
};
__device__ inline CtaMatrix cta_matrix(const PlanarArgs& a) {
  CtaMatrix m{a.body, a.aux, a.y, a.mat_rows, a.out, static_cast<int64_t>(blockIdx.x)};
#pragma unroll
  for (int p = 1; p < kMaxParts; ++p) {
    if (p < a.parts.n && static_cast<int>(blockIdx.x) >= a.parts.first[p]) {
      m = CtaMatrix{a.parts.w[p],   a.parts.aux[p], a.parts.y[p],
                    a.parts.out[p], a.parts.out[p], blockIdx.x - a.parts.first[p]};
    }
  }
  return m;
}

// The slots a CTA serves (ids, count) and their matrix. Without groups: slots
// blockIdx.y * slots_per_cta ..; with groups (kSlots == kMaxSlots): the group blockIdx.y of the
// expert-sorted order. False when the CTA has nothing to do (a group index past the last group).
template <int kSlots>
__device__ bool cta_slots(const PlanarArgs& a, int* ids, int* ns, int* e) {
  if (a.groups.order == nullptr) {
    const int s0 = static_cast<int>(blockIdx.y) * a.slots_per_cta;
    *ns = min(a.slots_per_cta, a.n_slots - s0);
    for (int s = 0; s < kSlots; ++s) ids[s] = s0 + min(s, *ns - 1);
    *e = a.experts != nullptr ? a.experts[s0] : 0;
    return true;
  }
  if constexpr (kSlots != kMaxSlots) return false;  // groups fill kMaxSlots slots
  const int g = static_cast<int>(blockIdx.y);
  const int32_t* gf = a.groups.group_first;
  if (g >= gf[a.n_matrices]) return false;
  const int lo = group_expert(gf, a.n_matrices, g);
  const int start = a.groups.first[lo] + (g - gf[lo]) * kMaxSlots;
  *ns = min(kMaxSlots, a.groups.first[lo + 1] - start);
  for (int s = 0; s < kSlots; ++s) ids[s] = a.groups.order[start + min(s, *ns - 1)];
  *e = lo;
  return true;
}

// The IQ2_XXS codebook and sign table in shared memory (empty for the other formats): every lane
// indexes them differently. load() is called by every thread of the CTA (it synchronises).
template <class F>
struct SharedTables {
  static constexpr bool kUsed = std::is_same_v<F, FmtIq2Xxs>;
  uint64_t grid[kUsed ? 256 : 1];
  uint8_t signs[kUsed ? 128 : 1];
  __device__ Iq2Lookup load() {
    if constexpr (kUsed) {
      for (int i = static_cast<int>(threadIdx.x); i < 256; i += static_cast<int>(blockDim.x))
        grid[i] = iq2::kIq2xxsGrid[i];
      for (int i = static_cast<int>(threadIdx.x); i < 128; i += static_cast<int>(blockDim.x))
        signs[i] = iq2::kIq2Signs[i];
      __syncthreads();
    }
    return Iq2Lookup{grid, signs};
  }
};

// kTileRows output rows and up to kSlots slots per CTA.
template <class F, int kTileRows, int kSlots>
__global__ void __launch_bounds__(kThreads) planar_kernel(const PlanarArgs a) {
  kernel_begin();
  using Term = typename F::Term;
  // Rounds of kC blocks: two-float terms (Q8_0) take half as many, in the same shared memory.
  constexpr int kC = kChunk * static_cast<int>(sizeof(float)) / static_cast<int>(sizeof(Term));
  __shared__ Term terms[kSlots][kTileRows][kC + 1];  // padded: the folding threads' banks differ
  const int64_t o0 = static_cast<int64_t>(blockIdx.x) * kTileRows;
  int ids[kSlots];
  int ns = 0, e = 0;
  if (!cta_slots<kSlots>(a, ids, &ns, &e)) return;  // uniform per CTA
  if (e < 0 || e >= a.n_matrices) __trap();         // a routing bug: fail loudly, never read wild

  // Encoded activation row of each of the CTA's slots.
  const uint8_t* xrow[kSlots];
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int64_t r = a.rows != nullptr ? a.rows[ids[s]] : ids[s];
    xrow[s] = a.enc + r * a.enc_row_bytes;
  }

  const int tid = static_cast<int>(threadIdx.x);
  __shared__ SharedTables<F> shared_tables;
  const Iq2Lookup tables = shared_tables.load();
  const int fold_row = tid % kTileRows, fold_slot = tid / kTileRows;
  const bool folds = fold_slot < ns && o0 + fold_row < a.out;
  const int64_t row0 = static_cast<int64_t>(e) * a.mat_rows + o0;  // first row of the tile
  float acc = 0.0f;
  for (int k0 = 0; k0 < a.nb; k0 += kC) {
    const int kc = min(kC, a.nb - k0);
#pragma unroll 2
    for (int item = tid; item < kTileRows * kc; item += kThreads) {
      const int r = item / kc;
      const int j = item - r * kc;
      if (o0 + r >= a.out) break;  // items are row-major: every later one is past the end too
      const int64_t blk = (row0 + r) * a.nb + k0 + j;
      const typename F::W w = F::load(a.body + blk * F::kBody, a.aux + blk * F::kAux);
      const int64_t xoff =
          ((o0 + r) / a.rows_per_group) * a.enc_group_bytes + int64_t{k0 + j} * F::kXBytes;
#pragma unroll
      for (int s = 0; s < kSlots; ++s) {
        if (s < ns) terms[s][r][j] = F::term(w, xrow[s] + xoff, tables);
      }
    }
    __syncthreads();
    if (folds) {
      const Term* t = terms[fold_slot][fold_row];
      for (int j = 0; j < kc; ++j) acc = planar::add_term(acc, t[j]);
    }
    __syncthreads();
  }
  if (folds) a.y[ids[fold_slot] * a.y_stride + o0 + fold_row] = F::finish(acc);
}

// Resident CTAs per SM the rows kernel is compiled for (0: no bound): the pass loop took IQ2_XXS
// to 79 registers and Q2_K to 99 (3 and 2 CTAs/SM); at 4 and 3 (64 registers, a 28-byte spill;
// 79) the H100's 16 / 32-session steps took ~1% less (28.6-28.8 / 45.3-45.7 ms against 29.0 /
// 45.9, plain runs before and after; 1-8 sessions alike). A bound of 1 would raise Q8_0 from 47
// registers to 64 and Q4_K from 126 to 196.
template <class F>
inline constexpr int kRowsCtasPerSm = std::is_same_v<F, FmtIq2Xxs>
                                          ? 4
                                          : (std::is_same_v<F, FmtQ2K> ? 3 : 0);

// One slot per blockIdx.y (decode: the token's row, or one expert slot), kLanes lanes per output
// row: lane l sums the terms of blocks l, l + kLanes, .. (its 16-byte loads of neighbouring blocks
// coalesce across the lanes), and a butterfly over the row's lanes adds the lanes' sums: another
// order than the CPU's left-to-right fold (a tolerance in matmul_q_test.cpp; the in-order fold it
// replaced was slower). Two rounds of loads are in flight, the next two issued before this
// round's terms are formed. A CTA takes a.passes passes of kThreads / kLanes rows (rows_passes).
// With a.stage_x (the CTA's rows all in one row group), the CTA first copies its activation row
// into shared memory: the lanes of a row read blocks kXBytes apart (an odd number of words, so no
// bank conflicts), which from global memory costs a cache line per lane and load.
template <class F, int kLanes>
__global__ void __launch_bounds__(kThreads, kRowsCtasPerSm<F>)
    planar_rows_kernel(const PlanarArgs a) {
  extern __shared__ __align__(16) uint8_t x_stage[];
  __shared__ SharedTables<F> shared_tables;
  constexpr int kPassRows = kThreads / kLanes;  // output rows of one pass
  const int slot = static_cast<int>(blockIdx.y);
  // A dense product's first weight loads go out before the wait (launch.cuh); a routed one
  // learns its expert from the routing kernel before it.
  const bool routed = a.experts != nullptr;
  if (routed) await_predecessor();
  const int e = routed ? a.experts[slot] : 0;
  if (e < 0 || e >= a.n_matrices) __trap();  // a routing bug: fail loudly, never read wild
  const CtaMatrix m = cta_matrix(a);
  const int lane = static_cast<int>(threadIdx.x) % kLanes;
  const int passes = a.passes;
  const int64_t cta_row0 = m.cta * passes * kPassRows;  // the CTA's first output row
  auto row_at = [&](int p) {
    return cta_row0 + int64_t{p} * kPassRows + static_cast<int>(threadIdx.x) / kLanes;
  };
  // Rows past the end compute row out - 1 again (every lane of a warp must reach the shuffles).
  auto clamp_row = [&](int64_t r) { return r < m.out ? r : m.out - 1; };
  int64_t blk0 = (static_cast<int64_t>(e) * m.mat_rows + clamp_row(row_at(0))) * a.nb;
  auto load = [&](int b) {
    typename F::W w{};
    if (b < a.nb) w = F::load(m.body + (blk0 + b) * F::kBody, m.aux + (blk0 + b) * F::kAux);
    return w;
  };
  typename F::W wa = load(lane), wb = load(kLanes + lane);  // in flight while x is staged
  if (!routed) await_predecessor();
  allow_successor();
  const int64_t xr = a.rows != nullptr ? a.rows[slot] : slot;
  const uint8_t* x_row = a.enc + xr * a.enc_row_bytes;
  if (a.stage_x) {
    const uint32_t* src = reinterpret_cast<const uint32_t*>(x_row + (cta_row0 / a.rows_per_group) *
                                                                        a.enc_group_bytes);
    uint32_t* dst = reinterpret_cast<uint32_t*>(x_stage);
    const int words = a.nb * (F::kXBytes / 4);
    for (int i = static_cast<int>(threadIdx.x); i < words; i += kThreads) dst[i] = src[i];
    __syncthreads();  // a.stage_x is the same for the whole CTA
  }
  const Iq2Lookup tables = shared_tables.load();
  using Term = typename F::Term;
  // Pass p: the rows cta_row0 + p * kPassRows ..; the first loads of pass p + 1 are issued
  // during the last round of pass p.
  for (int p = 0; p < passes && cta_row0 + int64_t{p} * kPassRows < m.out; ++p) {
    const int64_t o_raw = row_at(p);
    const int64_t o = clamp_row(o_raw);
    const uint8_t* x = a.stage_x ? x_stage : x_row + (o / a.rows_per_group) * a.enc_group_bytes;
    auto term = [&](const typename F::W& w, int b) {
      return b < a.nb ? F::term(w, x + int64_t{b} * F::kXBytes, tables) : Term{};
    };
    float acc = 0.0f;
    for (int b0 = 0; b0 < a.nb; b0 += 2 * kLanes) {
      const int ba = b0 + lane, bb = b0 + kLanes + lane;
      const Term t0 = term(wa, ba);
      const Term t1 = term(wb, bb);
      if (b0 + 2 * kLanes < a.nb) {
        wa = load(ba + 2 * kLanes), wb = load(bb + 2 * kLanes);
      } else if (p + 1 < passes) {
        blk0 = (static_cast<int64_t>(e) * m.mat_rows + clamp_row(row_at(p + 1))) * a.nb;
        wa = load(lane), wb = load(kLanes + lane);
      }
      if (ba < a.nb) acc = planar::add_term(acc, t0);
      if (bb < a.nb) acc = planar::add_term(acc, t1);
    }
#pragma unroll
    for (int off = kLanes / 2; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0 && o_raw < m.out) m.y[slot * a.y_stride + o] = F::finish(acc);
  }
}

// kSlots (2, 4 or 8) slots of one matrix per CTA (a batched decode step of a few sessions),
// kLanes lanes per output row: the lanes load the weights as planar_rows_kernel does and form
// every slot's terms from one load, each lane summing its own blocks per slot, and a butterfly
// per slot adds the row's lanes (the rows kernel's order). The activation rows are staged as
// there (a.stage_x). The grid is (row CTAs, slot groups), or (slot groups, row CTAs) with
// a.slot_groups_in_x: the slot groups of one weight tile run side by side and share its reads
// in L2.
template <class F, int kLanes, int kSlots>
__global__ void __launch_bounds__(kThreads) planar_slots_kernel(const PlanarArgs a) {
  extern __shared__ __align__(16) uint8_t x_stage[];
  __shared__ SharedTables<F> shared_tables;
  const int tid = static_cast<int>(threadIdx.x);
  const int row_cta = static_cast<int>(a.slot_groups_in_x ? blockIdx.y : blockIdx.x);
  const int slot0 = static_cast<int>(a.slot_groups_in_x ? blockIdx.x : blockIdx.y) * kSlots;
  const int ns = min(kSlots, a.n_slots - slot0);
  const int lane = tid % kLanes;
  const int64_t o_raw = (static_cast<int64_t>(row_cta) * kThreads + tid) / kLanes;
  const int64_t o = o_raw < a.out ? o_raw : a.out - 1;  // every lane reaches the shuffles
  const int64_t blk0 = o * a.nb;
  auto load = [&](int b) {
    typename F::W w{};
    if (b < a.nb) w = F::load(a.body + (blk0 + b) * F::kBody, a.aux + (blk0 + b) * F::kAux);
    return w;
  };
  typename F::W wa = load(lane), wb = load(kLanes + lane);  // in flight while x is staged
  kernel_begin();  // the weights' first loads went out before the wait (launch.cuh)
  const uint8_t* x[kSlots];
  const int words = a.nb * (F::kXBytes / 4);
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int slot = slot0 + min(s, ns - 1);
    const int64_t xr = a.rows != nullptr ? a.rows[slot] : slot;
    x[s] = a.enc + xr * a.enc_row_bytes + (o / a.rows_per_group) * a.enc_group_bytes;
  }
  if (a.stage_x) {
    const int64_t first_row = static_cast<int64_t>(row_cta) * (kThreads / kLanes);
    const int64_t group_off = (first_row / a.rows_per_group) * a.enc_group_bytes;
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      if (s < ns) {
        const int64_t xr = a.rows != nullptr ? a.rows[slot0 + s] : slot0 + s;
        const auto* src =
            reinterpret_cast<const uint32_t*>(a.enc + xr * a.enc_row_bytes + group_off);
        uint32_t* dst = reinterpret_cast<uint32_t*>(x_stage) + s * words;
        for (int i = tid; i < words; i += kThreads) dst[i] = src[i];
      }
      x[s] = x_stage + int64_t{min(s, ns - 1)} * words * 4;
    }
    __syncthreads();  // a.stage_x is the same for the whole CTA
  }
  const Iq2Lookup tables = shared_tables.load();
  constexpr int kRound = 2 * kLanes;  // blocks per round
  float sums[kSlots];
#pragma unroll
  for (int s = 0; s < kSlots; ++s) sums[s] = 0.0f;
  for (int b0 = 0; b0 < a.nb; b0 += kRound) {
    const int ba = b0 + lane, bb = b0 + kLanes + lane;
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      if (ba < a.nb)
        sums[s] = planar::add_term(sums[s], F::term(wa, x[s] + int64_t{ba} * F::kXBytes, tables));
      if (bb < a.nb)
        sums[s] = planar::add_term(sums[s], F::term(wb, x[s] + int64_t{bb} * F::kXBytes, tables));
    }
    if (b0 + kRound < a.nb) wa = load(ba + kRound), wb = load(bb + kRound);
  }
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
#pragma unroll
    for (int off = kLanes / 2; off > 0; off /= 2)
      sums[s] += __shfl_xor_sync(0xffffffffu, sums[s], off);
  }
  if (lane == 0 && o_raw < a.out) {
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      if (s < ns) a.y[int64_t{slot0 + s} * a.y_stride + o] = F::finish(sums[s]);
    }
  }
}

// ---- packing: one thread per block ----

__global__ void pack_kernel(int type, const uint8_t* src, int64_t n_blocks, int block_bytes,
                            uint8_t* dst) {
  kernel_begin();
  const int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= n_blocks) return;
  if (!planar::pack_block(static_cast<GgufType>(type), src + b * block_bytes, b, n_blocks, dst))
    __trap();
}

constexpr int64_t kMaxStagedBytes = 40 * 1024;  // with the IQ2 tables, under the 48 KiB default
// The rows kernel takes the most lanes per row (32, 16, 8) that give each lane at least this many
// blocks of the row. Fewer lanes mean more rows per CTA (the staged activation row serves more of
// them) and more loads in flight per thread (the lanes' sums, and so the last bits, differ). On
// the H200, 4 decoded Flash q2 faster than 1. Fewer than 8 lanes for rows of few blocks (Flash's
// routed IQ2_XXS 16-block and Q2_K 8-block rows) lost their A/B: 4 lanes decoded more slowly.
constexpr int kRowsBlocksPerLane = 4;
// A rows-kernel CTA takes up to kRowsMaxPasses passes (powers of two) of kThreads / lanes rows
// while the launch keeps kRowsMinCtas CTAs (about one wave: 132 SMs x 4 resident CTAs), each pass
// after the first reusing the staged activation row and IQ2 tables, its weight loads issued in
// the pass before: the routed launches of batched decode steps (one pass staged them for 1-2
// blocks a lane). H100, Flash q2 cut to 30 layers, ds4-bench --sessions at 2k, p50: 4 / 8 / 16 / 32
// sessions 11.89 / 17.74 / 29.48 / 46.64 ms against 12.43 / 18.82 / 31.57 / 51.50 with one pass;
// 1 session (768 CTAs) unchanged. At most 4 or 16 passes measured alike; a minimum of 256 CTAs
// slowed 4 sessions (12.50 ms: 384 CTAs, under a wave).
constexpr int kRowsMaxPasses = 8;
constexpr int64_t kRowsMinCtas = 512;
// Products of one matrix of 2 .. kSlotsMaxSlots slots take planar_slots_kernel (CTAs of up to 8
// slots); more take the tensor cores (planar_uses_imma) or the tile kernel. On the H200, Flash q2
// decode steps of 8 and 16 sessions (ds4-bench --sessions) were faster on the slots kernel, steps
// of 32 on the tensor cores.
constexpr int kSlotsMaxSlots = 16;
// Q8_0 products of one matrix of kQ8MmaMinSlots .. kQ8MmaMaxSlots slots take the decode
// tensor-core kernel (matmul_q8_mma.cuh) instead of the slots kernel (up to 16) and the prefill
// tensor-core kernel (17-32). On the H200, Flash q2 decode steps with it were slower at 4
// sessions and faster from 8 on.
constexpr int kQ8MmaMinSlots = 8;

// Bytes of one block's body plane entry (the layout above).
int64_t planar_body_bytes(GgufType t) {
  switch (t) {
    case GgufType::kQ8_0: return FmtQ8_0::kBody;
    case GgufType::kQ2_K: return FmtQ2K::kBody;
    case GgufType::kQ4_K: return FmtQ4K::kBody;
    case GgufType::kIQ2_XXS: return FmtIq2Xxs::kBody;
    default: DS4_CHECK_MSG(false, "planar matmul: unsupported type"); return 0;
  }
}

// Lanes per output row of the rows and slots kernels for rows of nb blocks.
int rows_lanes(int nb) {
  return nb >= 32 * kRowsBlocksPerLane ? 32 : (nb >= 16 * kRowsBlocksPerLane ? 16 : 8);
}
// CTAs of the rows and slots kernels for out rows of lanes lanes each, `passes` passes a CTA.
int64_t rows_ctas(int64_t out, int lanes, int passes = 1) {
  const int64_t rows_per_cta = int64_t{kThreads / lanes} * passes;
  return (out + rows_per_cta - 1) / rows_per_cta;
}
// Passes per rows-kernel CTA for a launch of ctas_one_pass x n_slots CTAs at one pass (above).
int rows_passes(int64_t ctas_one_pass, int64_t n_slots) {
  int p = 1;
  while (p * 2 <= kRowsMaxPasses && ctas_one_pass * n_slots / (p * 2) >= kRowsMinCtas) p *= 2;
  return p;
}

// go(std::integral_constant<int, lanes>) for the lanes of rows_lanes.
template <class G>
void by_lanes(int lanes, G go) {
  if (lanes == 32) {
    go(std::integral_constant<int, 32>{});
  } else if (lanes == 16) {
    go(std::integral_constant<int, 16>{});
  } else {
    go(std::integral_constant<int, 8>{});
  }
  DS4_CUDA_CHECK_LAUNCH();
}

// Whether the activation rows (x_bytes per CTA) can be staged in shared memory: the CTA's rows
// share one row group and the rows fit the default shared memory.
bool stageable(const PlanarArgs& a, int lanes, int64_t x_bytes) {
  return a.rows_per_group % ((kThreads / lanes) * a.passes) == 0 && x_bytes <= kMaxStagedBytes &&
         aligned_to(a.enc, 4) && a.enc_row_bytes % 4 == 0 && a.enc_group_bytes % 4 == 0;
}

// One slot per CTA (decode, or experts without groups): a few lanes per output row, each lane a
// block at a time (planar_rows_kernel), ctas CTAs along x.
template <class F>
void launch_rows(PlanarArgs a, int64_t ctas, cudaStream_t stream) {
  static_assert(F::kXBytes % 4 == 0, "activation blocks are copied as words");
  const int lanes = rows_lanes(a.nb);
  DS4_CHECK_MSG(ctas > 0 && ctas <= INT_MAX && a.n_slots <= kMaxGridYZ,
                "planar matmul: %d slots, %lld CTAs", a.n_slots, static_cast<long long>(ctas));
  const dim3 grid(static_cast<unsigned>(ctas), static_cast<unsigned>(a.n_slots));
  const int64_t x_bytes = int64_t{a.nb} * F::kXBytes;
  a.stage_x = stageable(a, lanes, x_bytes);
  const size_t smem = a.stage_x ? static_cast<size_t>(x_bytes) : 0;
  by_lanes(lanes, [&](auto lanes_c) {
    launch(planar_rows_kernel<F, decltype(lanes_c)::value>, grid, kThreads, smem, stream, a);
  });
}

template <class F>
void launch_planar(const Weight& w, PlanarArgs a, cudaStream_t stream) {
  const int lanes = rows_lanes(a.nb);
  const int64_t ctas = rows_ctas(a.out, lanes);
  DS4_CHECK_MSG(a.out > 0 && ctas <= INT_MAX, "planar matmul: %d slots, %d rows", a.n_slots, a.out);
  if (a.groups.order == nullptr && (a.experts != nullptr || a.n_slots == 1)) {
    a.passes = rows_passes(ctas, a.n_slots);
    launch_rows<F>(a, rows_ctas(a.out, lanes, a.passes), stream);
    return;
  }
  // A few slots of one matrix (a batched decode step of a few sessions): planar_slots_kernel,
  // up to 8 slots per CTA from one read of the weights.
  if (a.groups.order == nullptr && a.experts == nullptr && a.n_slots <= kSlotsMaxSlots) {
    const int slots = a.n_slots == 2 ? 2 : (a.n_slots <= 4 ? 4 : 8);
    const int64_t slot_groups = (a.n_slots + slots - 1) / slots;
    a.slot_groups_in_x = slot_groups > 1 && ctas <= kMaxGridYZ;
    DS4_CHECK_MSG(a.slot_groups_in_x || slot_groups <= kMaxGridYZ, "planar matmul: %d slots",
                  a.n_slots);
    const dim3 grid = a.slot_groups_in_x
                          ? dim3(static_cast<unsigned>(slot_groups), static_cast<unsigned>(ctas))
                          : dim3(static_cast<unsigned>(ctas), static_cast<unsigned>(slot_groups));
    const int64_t x_bytes = int64_t{a.nb} * F::kXBytes * slots;
    a.stage_x = stageable(a, lanes, x_bytes);
    by_lanes(lanes, [&](auto lanes_c) {
      constexpr int kL = decltype(lanes_c)::value;
      auto go = [&](auto slots_c) {
        constexpr int kS = decltype(slots_c)::value;
        const size_t smem = a.stage_x ? static_cast<size_t>(x_bytes) : 0;
        DS4_CUDA_CHECK(cudaFuncSetAttribute(planar_slots_kernel<F, kL, kS>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(smem)));
        launch(planar_slots_kernel<F, kL, kS>, grid, kThreads, smem, stream, a);
      };
      if (slots == 2) {
        go(std::integral_constant<int, 2>{});
      } else if (slots == 4) {
        go(std::integral_constant<int, 4>{});
      } else {
        go(std::integral_constant<int, 8>{});
      }
    });
    return;
  }
  // Otherwise (many slots of one matrix where the tensor cores do not apply, or slots grouped
  // by expert): the tile kernel, kMaxSlots slots per CTA.
  const int64_t slot_tiles = a.groups.order != nullptr
                                 ? a.groups.max_groups
                                 : (a.n_slots + a.slots_per_cta - 1) / a.slots_per_cta;
  const int64_t tiles = (a.out + kRows - 1) / kRows;
  DS4_CHECK_MSG(tiles <= INT_MAX && slot_tiles <= kMaxGridYZ, "planar matmul: grid %lld x %lld",
                static_cast<long long>(tiles), static_cast<long long>(slot_tiles));
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(slot_tiles));
  launch(planar_kernel<F, kRows, kMaxSlots>, grid, kThreads, 0, stream, a);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool has_planar_layout(gguf::GgufType t) {
  return t == GgufType::kQ8_0 || t == GgufType::kQ2_K || t == GgufType::kQ4_K ||
         t == GgufType::kIQ2_XXS;
}

void launch_pack_planar(gguf::GgufType t, const void* src, int64_t n_blocks, void* dst,
                        cudaStream_t stream) {
  DS4_CHECK_MSG(has_planar_layout(t), "pack: no planar layout for %.*s",
                static_cast<int>(gguf::to_string(t).size()), gguf::to_string(t).data());
  DS4_CHECK_MSG(n_blocks >= 0 && aligned16(dst),
                "pack: %lld blocks, destination not 16-byte aligned",
                static_cast<long long>(n_blocks));
  if (n_blocks == 0) return;
  constexpr int kPackThreads = 256;
  const int64_t ctas = (n_blocks + kPackThreads - 1) / kPackThreads;
  DS4_CHECK(ctas <= INT_MAX);
  launch(pack_kernel, static_cast<unsigned>(ctas), kPackThreads, 0, stream, static_cast<int>(t),
         static_cast<const uint8_t*>(src), n_blocks, static_cast<int>(gguf::block_bytes(t)),
         static_cast<uint8_t*>(dst));
  DS4_CUDA_CHECK_LAUNCH();
}

int planar_rows_passes(const Weight& w, int64_t n_slots) {
  DS4_CHECK_MSG(has_planar_layout(w.type), "planar matmul: unsupported type");
  const int64_t nb = w.ne[0] / gguf::type_info(static_cast<uint32_t>(w.type))->block_elems;
  DS4_CHECK(nb > 0 && nb <= INT_MAX);
  return rows_passes(rows_ctas(w.ne[1], rows_lanes(static_cast<int>(nb))), n_slots);
}

bool planar_uses_imma(const Weight& w, int64_t n_slots, int groups, bool experts, bool grouped,
                      PlanarPath path) {
  if (path == PlanarPath::kScalar || !imma_has_format(w.type) || (experts && !grouped))
    return false;
  const int64_t rows_per_group = w.ne[1] / groups;
  if (groups != 1 && rows_per_group % kImmaRows != 0) return false;
  if (path == PlanarPath::kImma) return true;
  // kAuto: without experts, past kSlotsMaxSlots slots (fewer take the slots kernel); grouped, 16
  // slots fill two of the CTA's four slot tiles and an expert should average a slot.
  if (!experts) return n_slots > kSlotsMaxSlots;
  return n_slots >= 16 && n_slots >= w.ne[2];
}

bool planar_uses_q8_mma(const Weight& w, int64_t n_slots, int groups, bool experts, bool grouped,
                        PlanarPath path) {
  if (w.type != GgufType::kQ8_0 || experts || grouped || n_slots < 2 || n_slots > kQ8MmaMaxSlots)
    return false;
  if (groups != 1 && (w.ne[1] / groups) % 16 != 0) return false;
  return path == PlanarPath::kQ8Mma || (path == PlanarPath::kAuto && n_slots >= kQ8MmaMinSlots);
}

bool planar_sums_reordered(const Weight& w, int64_t n_slots, int groups, bool experts, bool grouped,
                           PlanarPath path) {
  if (planar_uses_q8_mma(w, n_slots, groups, experts, grouped, path)) return true;
  if (grouped || planar_uses_imma(w, n_slots, groups, experts, grouped, path)) return false;
  return experts || n_slots <= kSlotsMaxSlots;  // launch_planar's rows and slots kernels
}

namespace {

// The kernels' arguments for w against the encoded rows (no slot groups).
PlanarArgs planar_args(const Weight& w, const void* enc, int64_t enc_row_bytes,
                       const int32_t* experts, const int32_t* rows, int64_t n_slots, int groups,
                       float* y, int64_t y_stride) {
  DS4_CHECK_MSG(w.layout == kLayoutPlanar && has_planar_layout(w.type),
                "planar matmul: weight not in the planar layout");
  const gguf::TypeInfo info = *gguf::type_info(static_cast<uint32_t>(w.type));
  const int64_t n_blocks = w.ne[0] / info.block_elems;
  DS4_CHECK(n_blocks <= INT_MAX && w.ne[1] <= INT_MAX && w.ne[2] <= INT_MAX);
  PlanarArgs a{};
  a.mat_rows = w.ne[1];
  a.n_matrices = static_cast<int>(w.ne[2]);
  a.out = static_cast<int>(w.ne[1]);
  a.rows_per_group = static_cast<int>(w.ne[1] / groups);
  a.nb = static_cast<int>(n_blocks);
  a.body = static_cast<const uint8_t*>(w.data);
  a.aux = a.body + w.ne[1] * w.ne[2] * n_blocks * planar_body_bytes(w.type);  // after the bodies
  a.enc = static_cast<const uint8_t*>(enc);
  a.enc_row_bytes = enc_row_bytes;
  a.enc_group_bytes =
      n_blocks * (w.type == GgufType::kQ8_0 ? static_cast<int64_t>(sizeof(ActQ8_0))
                                            : static_cast<int64_t>(sizeof(BlockQ8_K)));
  a.experts = experts;
  a.rows = rows;
  a.n_slots = static_cast<int>(n_slots);
  a.slots_per_cta =
      experts != nullptr ? 1 : static_cast<int>(std::min<int64_t>(kMaxSlots, n_slots));
  a.y = y;
  a.y_stride = y_stride;
  return a;
}

}  // namespace

bool launch_matmul_planar_parts(std::span<const Weight* const> w, std::span<float* const> y,
                                const void* enc, int64_t enc_row_bytes, const int32_t* experts,
                                const int32_t* rows, int64_t n_slots, int64_t y_stride,
                                cudaStream_t stream) {
  const size_t n = w.size();
  if (n < 2 || n > static_cast<size_t>(kMaxParts) || y.size() != n) return false;
  if (n_slots < 1 || (experts == nullptr && n_slots != 1)) return false;
  const Weight& w0 = *w[0];
  for (const Weight* wi : w) {
    if (wi->layout != kLayoutPlanar || wi->type != w0.type || wi->ne[0] != w0.ne[0] ||
        wi->ne[2] != w0.ne[2] || wi->ne[1] < 1 || wi->ne[1] > INT_MAX)
      return false;
  }
  if (!has_planar_layout(w0.type)) return false;
  PlanarArgs a = planar_args(w0, enc, enc_row_bytes, experts, rows, n_slots, 1, y[0], y_stride);
  a.rows_per_group = 1 << 30;  // one output group per part: every CTA's rows share it
  const int lanes = rows_lanes(a.nb);
  a.parts.n = static_cast<int>(n);
  int64_t ctas_one_pass = 0;
  for (const Weight* wi : w) ctas_one_pass += rows_ctas(wi->ne[1], lanes);
  a.passes = rows_passes(ctas_one_pass, n_slots);
  int64_t ctas = 0;
  for (size_t p = 0; p < n; ++p) {
    const Weight& wp = *w[p];
    DS4_CHECK(ctas <= INT_MAX);
    a.parts.first[p] = static_cast<int>(ctas);
    a.parts.w[p] = static_cast<const uint8_t*>(wp.data);
    a.parts.aux[p] = a.parts.w[p] + wp.ne[1] * wp.ne[2] * a.nb * planar_body_bytes(wp.type);
    a.parts.y[p] = y[p];
    a.parts.out[p] = static_cast<int>(wp.ne[1]);
    ctas += rows_ctas(wp.ne[1], lanes, a.passes);
  }
  a.parts.first[n] = static_cast<int>(std::min<int64_t>(ctas, INT_MAX));
  switch (w0.type) {
    case GgufType::kQ8_0: launch_rows<FmtQ8_0>(a, ctas, stream); break;
    case GgufType::kQ2_K: launch_rows<FmtQ2K>(a, ctas, stream); break;
    case GgufType::kQ4_K: launch_rows<FmtQ4K>(a, ctas, stream); break;
    case GgufType::kIQ2_XXS: launch_rows<FmtIq2Xxs>(a, ctas, stream); break;
    default: return false;
  }
  return true;
}

void launch_matmul_planar(const Weight& w, const void* enc, int64_t enc_row_bytes,
                          const int32_t* experts, const int32_t* rows, int64_t n_slots, int groups,
                          float* y, int64_t y_stride, cudaStream_t stream,
                          const SlotGroups* groups_by_expert, PlanarPath path) {
  PlanarArgs a = planar_args(w, enc, enc_row_bytes, experts, rows, n_slots, groups, y, y_stride);
  if (groups_by_expert != nullptr) {
    DS4_CHECK_MSG(experts != nullptr, "planar matmul: slot groups without experts");
    a.groups = *groups_by_expert;
  }
  if (planar_uses_q8_mma(w, n_slots, groups, experts != nullptr, groups_by_expert != nullptr,
                         path)) {
    const Q8MmaProduct q{.body = a.body,
                         .aux = a.aux,
                         .out = a.out,
                         .nb = a.nb,
                         .rows_per_group = a.rows_per_group,
                         .enc = a.enc,
                         .enc_row_bytes = a.enc_row_bytes,
                         .enc_group_bytes = a.enc_group_bytes,
                         .rows = rows,
                         .n_slots = a.n_slots,
                         .y = y,
                         .y_stride = y_stride};
    if (q8_mma_fits(q)) {
      launch_matmul_q8_mma(q, stream);
      return;
    }
  }
  if (planar_uses_imma(w, n_slots, groups, experts != nullptr, groups_by_expert != nullptr, path)) {
    ImmaProduct p;
    p.type = w.type;
    p.body = a.body;
    p.aux = a.aux;
    p.mat_rows = a.mat_rows;
    p.n_matrices = a.n_matrices;
    p.nb = a.nb;
    p.rows_per_group = a.rows_per_group;
    p.enc = a.enc;
    p.enc_row_bytes = a.enc_row_bytes;
    p.enc_group_bytes = a.enc_group_bytes;
    p.rows = rows;
    p.n_slots = a.n_slots;
    p.groups = a.groups;
    p.y = y;
    p.y_stride = y_stride;
    launch_matmul_imma(p, stream);
    return;
  }
  switch (w.type) {
    case GgufType::kQ8_0: launch_planar<FmtQ8_0>(w, a, stream); break;
    case GgufType::kQ2_K: launch_planar<FmtQ2K>(w, a, stream); break;
    case GgufType::kQ4_K: launch_planar<FmtQ4K>(w, a, stream); break;
    case GgufType::kIQ2_XXS: launch_planar<FmtIq2Xxs>(w, a, stream); break;
    default: DS4_CHECK_MSG(false, "planar matmul: unsupported type");
  }
}

}  // namespace ds4::backend::cuda
