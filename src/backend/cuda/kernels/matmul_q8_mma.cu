// src/backend/cuda/kernels/matmul_q8_mma.cu: Q8_0 planar products of 2-32 slots on the int8
// tensor cores (contract in matmul_q8_mma.cuh). Built with -fmad=false: the one fused
// multiply-add per block term is written (planar::add_term).
//
// CTA: 4 warps, 16 output rows (one m16 tile); warp w takes the blocks w, w + 4, .. of the rows.
// Per block, lane (g = lane / 4, t = lane % 4) loads 8 bytes at 8 t of rows g and g + 8 (the
// A fragment's registers 0 / 2 and 1 / 3) and, per n8 tile, 8 bytes at 8 t of its slot g's
// activation codes (B registers 0 and 1). The PTX fragments put K = 4 t .. and 16 + 4 t .. in
// those registers; A and B permute K the same way, so each product is the block's exact integer
// sum for (row, slot). The C elements (rows g, g + 8; slots 2 t, 2 t + 1 of the tile) become the
// block's terms (FmtQ8_0::from_sums) and fold into the thread's accumulators. At the end the four
// warps' sums meet in shared memory and are added in warp order.
#include <algorithm>
#include <climits>

#include "backend/cuda/check.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/launch_limits.h"
#include "backend/cuda/kernels/matmul_q8_mma.cuh"
#include "backend/cuda/kernels/mma_s8.cuh"
#include "backend/cuda/kernels/planar_formats.cuh"
#include "base/check.h"
#include "quant/blocks.h"

namespace ds4::backend::cuda {
namespace {

using planar::FmtQ8_0;

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kTileRows = 16;
constexpr int64_t kXBytes = sizeof(quant::ActQ8_0);  // d (float), then 32 codes
static_assert(FmtQ8_0::kBody == 32 && kXBytes == 36, "Q8_0 planar body and activation block");

__device__ __forceinline__ uint32_t word_at(const uint8_t* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

// The activation row of slot s (clamped to the last slot: its results are not stored).
__device__ inline const uint8_t* slot_row(const Q8MmaProduct& p, int s, int64_t group_off) {
  s = min(s, p.n_slots - 1);
  const int64_t r = p.rows != nullptr ? p.rows[s] : s;
  return p.enc + r * p.enc_row_bytes + group_off;
}

// kNT n8 tiles: slots 0 .. 8 kNT - 1.
template <int kNT>
__global__ void __launch_bounds__(kThreads) q8_mma_kernel(const Q8MmaProduct p) {
  constexpr int kSlots = 8 * kNT;
  __shared__ float red[kWarps][kTileRows][kSlots];
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, t = lane % 4;
  const int o0 = static_cast<int>(blockIdx.x) * kTileRows;
  const int tile_rows = min(kTileRows, p.out - o0);
  // The CTA's weights (rows o0 .., consecutive in both planes) go to L2 before the wait.
  prefetch_l2(p.body + int64_t{o0} * p.nb * FmtQ8_0::kBody,
              int64_t{tile_rows} * p.nb * FmtQ8_0::kBody);
  prefetch_l2(p.aux + int64_t{o0} * p.nb * FmtQ8_0::kAux,
              int64_t{tile_rows} * p.nb * FmtQ8_0::kAux);
  kernel_begin();
  // Rows of this lane's A registers and C elements (clamped for the loads).
  const int ra = min(o0 + g, p.out - 1), rb = min(o0 + g + 8, p.out - 1);
  const uint8_t* wa = p.body + int64_t{ra} * p.nb * FmtQ8_0::kBody + 8 * t;
  const uint8_t* wb = p.body + int64_t{rb} * p.nb * FmtQ8_0::kBody + 8 * t;
  const auto* aux = reinterpret_cast<const uint16_t*>(p.aux);
  const uint16_t* da = aux + int64_t{ra} * p.nb;
  const uint16_t* db = aux + int64_t{rb} * p.nb;
  const int64_t group_off = int64_t{o0 / p.rows_per_group} * p.enc_group_bytes;
  const uint8_t* xb[kNT];   // B column g of tile j: its codes at + 4 + 8 t
  const uint8_t* xc0[kNT];  // C columns 2 t and 2 t + 1 of tile j: their scales
  const uint8_t* xc1[kNT];
#pragma unroll
  for (int j = 0; j < kNT; ++j) {
    xb[j] = slot_row(p, 8 * j + g, group_off) + 4 + 8 * t;
    xc0[j] = slot_row(p, 8 * j + 2 * t, group_off);
    xc1[j] = slot_row(p, 8 * j + 2 * t + 1, group_off);
  }
  float acc[kNT][4];
#pragma unroll
  for (int j = 0; j < kNT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
#pragma unroll 2
  for (int b = warp; b < p.nb; b += kWarps) {
    const int64_t wo = int64_t{b} * FmtQ8_0::kBody, xo = int64_t{b} * kXBytes;
    const uint2 qa = *reinterpret_cast<const uint2*>(wa + wo);
    const uint2 qb = *reinterpret_cast<const uint2*>(wb + wo);
    const uint32_t a[4] = {qa.x, qb.x, qa.y, qb.y};
    const float fa = planar::f16_bits(da[b]), fb = planar::f16_bits(db[b]);
#pragma unroll
    for (int j = 0; j < kNT; ++j) {
      int d[4];
      mma_s8_fresh(d, a, word_at(xb[j] + xo), word_at(xb[j] + xo + 4));
      const float x0 = planar::x_scale(xc0[j] + xo), x1 = planar::x_scale(xc1[j] + xo);
      acc[j][0] = planar::add_term(acc[j][0], FmtQ8_0::from_sums(fa, x0, d[0]));
      acc[j][1] = planar::add_term(acc[j][1], FmtQ8_0::from_sums(fa, x1, d[1]));
      acc[j][2] = planar::add_term(acc[j][2], FmtQ8_0::from_sums(fb, x0, d[2]));
      acc[j][3] = planar::add_term(acc[j][3], FmtQ8_0::from_sums(fb, x1, d[3]));
    }
  }
#pragma unroll
  for (int j = 0; j < kNT; ++j) {
    red[warp][g][8 * j + 2 * t] = acc[j][0];
    red[warp][g][8 * j + 2 * t + 1] = acc[j][1];
    red[warp][g + 8][8 * j + 2 * t] = acc[j][2];
    red[warp][g + 8][8 * j + 2 * t + 1] = acc[j][3];
  }
  __syncthreads();
  // Output (row i % 16, slot i / 16): a slot's 16 rows are consecutive in y.
  for (int i = tid; i < kTileRows * kSlots; i += kThreads) {
    const int r = i % kTileRows, s = i / kTileRows;
    if (r >= tile_rows || s >= p.n_slots) continue;
    float sum = red[0][r][s];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) sum += red[w][r][s];
    p.y[int64_t{s} * p.y_stride + o0 + r] = FmtQ8_0::finish(sum);
  }
}

}  // namespace

bool q8_mma_fits(const Q8MmaProduct& p) {
  return p.n_slots >= 2 && p.n_slots <= kQ8MmaMaxSlots && p.out >= 1 && p.nb >= 1 &&
         (p.rows_per_group >= p.out || p.rows_per_group % kTileRows == 0) &&
         aligned_to(p.body, 16) && aligned_to(p.aux, 2) && aligned_to(p.enc, 4) &&
         p.enc_row_bytes % 4 == 0 && p.enc_group_bytes % 4 == 0;
}

void launch_matmul_q8_mma(const Q8MmaProduct& p, cudaStream_t stream) {
  DS4_CHECK_MSG(q8_mma_fits(p), "q8 mma: %d slots, %d rows (row groups of %d)", p.n_slots, p.out,
                p.rows_per_group);
  const unsigned ctas = static_cast<unsigned>((int64_t{p.out} + kTileRows - 1) / kTileRows);
  const int tiles = (p.n_slots + 7) / 8;
  if (tiles == 1) {
    launch(q8_mma_kernel<1>, ctas, kThreads, 0, stream, p);
  } else if (tiles == 2) {
    launch(q8_mma_kernel<2>, ctas, kThreads, 0, stream, p);
  } else if (tiles == 3) {
    launch(q8_mma_kernel<3>, ctas, kThreads, 0, stream, p);
  } else {
    launch(q8_mma_kernel<4>, ctas, kThreads, 0, stream, p);
  }
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::backend::cuda
