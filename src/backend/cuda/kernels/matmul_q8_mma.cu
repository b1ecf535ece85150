// src/backend/cuda/kernels/matmul_q8_mma.cu: Q8_0 planar products of 2-32 slots on the int8
// tensor cores (contract in matmul_q8_mma.cuh). Built with -fmad=false: the one fused
// multiply-add per block term is written (planar::add_term).
//
// CTA: 4 warps, 16 output rows (one m16 tile) and one of the tile's `splits` ranges of blocks;
// the splits of a tile are the CTAs of one thread-block cluster. Warp w takes the blocks
// w, w + 4, .. of its CTA's range. Per block, lane (g = lane / 4, t = lane % 4) loads 8 bytes at
// 8 t of rows g and g + 8 (the A fragment's registers 0 / 2 and 1 / 3) and, per n8 tile, 8 bytes
// at 8 t of its slot g's activation codes (B registers 0 and 1). The PTX fragments put K = 4 t ..
// and 16 + 4 t .. in those registers; A and B permute K the same way, so each product is the
// block's exact integer sum for (row, slot). The C elements (rows g, g + 8; slots 2 t, 2 t + 1 of
// the tile) become the block's terms (FmtQ8_0::from_sums) and fold into the thread's
// accumulators. At the end the four warps' sums meet in shared memory and are added in warp
// order, then the cluster's CTAs add their ranges' sums in rank order through distributed shared
// memory (sm_90), each CTA storing a share of the tile's outputs.
#include <cooperative_groups.h>

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

// kNT n8 tiles: slots 0 .. 8 kNT - 1; `splits` CTAs (a cluster) per 16-row tile, each taking
// `range` blocks (the last fewer).
template <int kNT>
__global__ void __launch_bounds__(kThreads)
    q8_mma_kernel(const Q8MmaProduct p, int splits, int range) {
  constexpr int kSlots = 8 * kNT;
  __shared__ float red[kWarps][kTileRows][kSlots];
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, t = lane % 4;
  const int rank = static_cast<int>(blockIdx.x) % splits;
  const int o0 = static_cast<int>(blockIdx.x) / splits * kTileRows;
  const int tile_rows = min(kTileRows, p.out - o0);
  const int b0 = rank * range, b1 = min(p.nb, b0 + range);
  // The CTA's weights (its blocks of rows o0 .., both planes) go to L2 before the wait.
  for (int r = 0; r < tile_rows; ++r) {
    const int64_t row = int64_t{o0 + r} * p.nb;
    prefetch_l2(p.body + (row + b0) * FmtQ8_0::kBody, int64_t{b1 - b0} * FmtQ8_0::kBody);
    prefetch_l2(p.aux + (row + b0) * FmtQ8_0::kAux, int64_t{b1 - b0} * FmtQ8_0::kAux);
  }
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
  for (int b = b0 + warp; b < b1; b += kWarps) {
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
  // The CTA's sum of element i (row i % 16, slot i / 16; a slot's 16 rows are consecutive in y)
  // into red[0], the warps in order: each thread reads and writes only its own elements.
  float* sums = &red[0][0][0];
  for (int i = tid; i < kTileRows * kSlots; i += kThreads) {
    const int r = i % kTileRows, s = i / kTileRows;
    float sum = red[0][r][s];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) sum += red[w][r][s];
    sums[r * kSlots + s] = sum;
  }
  if (splits == 1) {
    __syncthreads();
    for (int i = tid; i < kTileRows * kSlots; i += kThreads) {
      const int r = i % kTileRows, s = i / kTileRows;
      if (r < tile_rows && s < p.n_slots)
        p.y[int64_t{s} * p.y_stride + o0 + r] = FmtQ8_0::finish(sums[r * kSlots + s]);
    }
    return;
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // The splits' sums in rank order; rank q stores the elements q, q + splits, ...
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();  // every CTA's sums are in its red[0]
  for (int i = rank + splits * tid; i < kTileRows * kSlots; i += splits * kThreads) {
    const int r = i % kTileRows, s = i / kTileRows;
    if (r >= tile_rows || s >= p.n_slots) continue;
    float sum = 0.0f;
    for (int q = 0; q < splits; ++q) sum += cluster.map_shared_rank(sums, q)[r * kSlots + s];
    p.y[int64_t{s} * p.y_stride + o0 + r] = FmtQ8_0::finish(sum);
  }
  cluster.sync();  // no CTA leaves while another reads its shared memory
#else
  __trap();  // clusters need sm_90; the launcher splits only there
#endif
}

// A tile's blocks split over the CTAs of a cluster so that a product has about kMinCtas CTAs (a
// 1,024-row product has 64 tiles: 64 CTAs of 4 warps left most of the SMs idle), each CTA keeping
// at least kMinRange blocks; at most kMaxSplits (the portable cluster size). The splits depend
// only on the weights' shape, so a slot's sums do not depend on the other slots. In one call on
// the H100 (Flash q2 cut to 30 layers, ds4-bench --sessions at 2k): 8 / 16 / 32 sessions 17.2 /
// 27.4 / 47.2 ms against 17.6 / 28.5 / 48.0 unsplit; a 1,056-CTA target 17.6 / 28.0 / 48.6.
constexpr int kMinCtas = 512;
constexpr int kMinRange = 8;
constexpr int kMaxSplits = 8;

// Whether every architecture this file is built for has clusters (sm_90 on: DS4_CUDA_CLUSTERS,
// src/backend/CMakeLists.txt); a build that includes an older one does not split. A property of
// the build, known here without asking the device at each launch: a binary built only for sm_90
// and later runs on nothing older.
#if defined(DS4_CUDA_CLUSTERS) && DS4_CUDA_CLUSTERS
constexpr bool kClusters = true;
#else
constexpr bool kClusters = false;
#endif

int q8_mma_splits(const Q8MmaProduct& p, int64_t tiles) {
  if (!kClusters) return 1;
  const int64_t splits = std::min<int64_t>((kMinCtas + tiles - 1) / tiles, p.nb / kMinRange);
  return static_cast<int>(std::clamp<int64_t>(splits, 1, kMaxSplits));
}

template <int kNT>
void launch_tiles(const Q8MmaProduct& p, int64_t tiles, int splits, cudaStream_t stream) {
  const int range = (p.nb + splits - 1) / splits;
  cudaLaunchAttribute attr[2];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  attr[1].id = cudaLaunchAttributeClusterDimension;
  attr[1].val.clusterDim.x = static_cast<unsigned>(splits);
  attr[1].val.clusterDim.y = 1;
  attr[1].val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(tiles * splits));
  config.blockDim = dim3(kThreads);
  config.stream = stream;
  config.attrs = attr;
  config.numAttrs = splits > 1 ? 2 : 1;
  (void)cudaLaunchKernelEx(&config, q8_mma_kernel<kNT>, p, splits, range);
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
  const int64_t tiles = (int64_t{p.out} + kTileRows - 1) / kTileRows;  // of 16 rows
  const int splits = q8_mma_splits(p, tiles);
  const int slot_tiles = (p.n_slots + 7) / 8;
  if (slot_tiles == 1) {
    launch_tiles<1>(p, tiles, splits, stream);
  } else if (slot_tiles == 2) {
    launch_tiles<2>(p, tiles, splits, stream);
  } else if (slot_tiles == 3) {
    launch_tiles<3>(p, tiles, splits, stream);
  } else {
    launch_tiles<4>(p, tiles, splits, stream);
  }
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::backend::cuda
