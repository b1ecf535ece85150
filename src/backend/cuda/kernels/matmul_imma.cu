// src/backend/cuda/kernels/matmul_imma.cu: the tensor-core planar kernel and its launcher
// (contract in matmul_imma.cuh).
//
// Tiles: 128 threads (4 warps); a CTA owns kM = 64 weight rows and kN = 32 slots, warp w the rows
// 16 w .. 16 w + 15 against all slots (four n8 tiles; a tile without a live slot is skipped, and
// its slots' codes are not copied, so a small expert group costs few products; Q8_0 takes two
// row tiles per warp where the row groups allow: 128 rows, warp w the rows 32 w .., each B
// fragment used twice). The K loop walks chunks of 256 elements (one IQ2_XXS or Q2_K block,
// eight Q8_0 blocks) through a ring of kS = kStages = 2 shared-memory stages: while the warps
// multiply chunk c, chunks c + 1 .. c + kS - 1 arrive by cp.async, the weights as stored, the
// activations' codes and scales (Q8_0 activations, where their chunks are 16-byte aligned, as whole
// stored chunks). Q8_0's weight codes are the A operand as they are; IQ2_XXS and Q2_K are decoded
// from their stage into one int8 A tile before the chunk's products (the first version loaded them
// a chunk ahead into registers). A stage holds B = 32 slots x 256 int8, each row padded to 272
// bytes so that a fragment load (8 rows x 4 words) touches 32 different banks, the slots' scales,
// and the chunk's weights. The grid puts the slot tiles in x, so the CTAs that share a weight tile
// run side by side and the tile comes from HBM about once.
//
// Exactness (the results equal the planar kernel's and the CPU reference's bit for bit):
//   * integer sums: int8 x int8 products with int32 accumulation are exact in any order. Q8_0:
//     one K step per block gives isum. Q2_K: the weights are code x 4-bit scale (<= 45), so the
//     block's 8 K steps accumulated in C give isum; summs = sum bsums x mins (dp2a, from the
//     activation block's bsums, as the reference). IQ2_XXS: one K step per 32-value group into a
//     zeroed C, times the group's 2s + 1 in int32, summed over the block's groups: bsum.
//   * float terms: each thread owns the C elements of its lanes (a fixed (row, slot) each); when
//     a block's sums are complete it forms the block's term with Fmt*::from_sums (the expressions
//     the planar kernel and dot_ref.cpp use; this file is built with -fmad=false) and adds it to
//     that output's accumulator with planar::add_term (Q8_0: one fused multiply-add). Blocks arrive
//     in order, so every output adds its terms in block order starting from 0, then Fmt::finish, as
//     the reference does.
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "backend/cuda/check.h"
#include "backend/cuda/kernels/async_copy.cuh"
#include "backend/cuda/kernels/imma_formats.cuh"
#include "backend/cuda/kernels/iq2_tables.cuh"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/launch_limits.h"
#include "backend/cuda/kernels/matmul_imma.cuh"
#include "backend/cuda/kernels/mma_s8.cuh"
#include "backend/cuda/kernels/planar_formats.cuh"
#include "base/check.h"
#include "quant/blocks.h"

namespace ds4::backend::cuda {
namespace {

using gguf::GgufType;
using planar::f16_bits;
using planar::FmtIq2Xxs;
using planar::FmtQ2K;
using planar::FmtQ8_0;
using planar::Iq2Lookup;
using quant::ActQ8_0;
using quant::BlockQ8_K;

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kM = kImmaRows;   // weight rows per CTA, 16 per warp
constexpr int kN = kImmaSlots;  // slots per CTA
constexpr int kNTiles = kN / 8;
constexpr int kK = 256;                   // elements per chunk
constexpr int kSteps = kK / 32;           // K = 32 products per chunk
constexpr int kPitch = imma::kTilePitch;  // words per staged row (K plus 16 bytes)
static_assert(kM == 16 * kWarps && kN % 8 == 0 && kThreads == 2 * kM,
              "tiles: 16 rows per warp, n8 slot tiles, two threads per row for the decodes");
static_assert(kPitch >= kK / 4 && kPitch % 4 == 0 && (kPitch / 4) % 2 == 1,
              "rows hold a chunk, 16-byte aligned, an odd number of 16-byte units");

constexpr int64_t kQ8KBytes = sizeof(BlockQ8_K);
constexpr int64_t kQ8KBsums = offsetof(BlockQ8_K, bsums);
constexpr int64_t kActQ8_0Bytes = sizeof(ActQ8_0);
static_assert(offsetof(BlockQ8_K, qs) == 4 && offsetof(ActQ8_0, qs) == 4 && kQ8KBsums % 4 == 0,
              "activation codes and bsums at 4-byte aligned offsets");

// ---- the product (the asynchronous copies: async_copy.cuh) ----

// One chunk's operands as they arrive: the slots' int8 codes (K innermost) and scales, and the
// weight rows' bytes as stored (P::Raw: Q8_0's codes are the A tile itself; IQ2_XXS and Q2_K are
// decoded into Decoded before the products).
template <class P>
struct alignas(16) Stage {
  uint32_t b[kN * P::kBPitch];
  typename P::Raw raw;
  typename P::SlotSide ss[kN];
};

// What the format code needs of the CTA.
struct Cta {
  const uint8_t* body;
  const uint8_t* aux;
  int nb;
  int64_t row0;                // the stack row of tile row 0
  int last;                    // the last tile row that exists (later rows read it again)
  const uint8_t* const* xrow;  // [kN] in shared memory: each slot's encoded row, at its group
  int live;                    // slots whose codes are copied (the live n8 tiles' slots)
  int tid;
  __device__ int64_t block(int r, int b) const { return (row0 + min(r, last)) * nb + b; }
  // The aux plane's 32-bit word holding f16 value i (the plane is 16-byte aligned).
  __device__ const uint8_t* aux_word_of_half(int64_t i) const { return aux + 4 * (i / 2); }
};

__device__ __forceinline__ float half_of_word(uint32_t w, int64_t i) {
  return f16_bits(static_cast<uint16_t>(w >> (16 * (i & 1))));
}

// Calls f(k) for the thread's items i = tid + k kThreads < kCount of a copy, k = 0, 1, ...: a
// trip count known at compile time, so the copies unroll without a run-time remainder and each
// item's address is the thread's fixed part plus a multiple of k (the first version's run-time
// strided loops spent ~20 instructions per copied word, about as many as the products).
template <int kCount, class F>
__device__ __forceinline__ void each_item(int tid, F&& f) {
#pragma unroll
  for (int k = 0; k < (kCount + kThreads - 1) / kThreads; ++k) {
    if (kCount % kThreads == 0 || tid + k * kThreads < kCount) f(k);
  }
}

// The 64 codes words of each live slot's Q8_K block b (IQ2_XXS, Q2_K): word w = tid % 64 of
// slots tid / 64 + 2 k.
template <class P>
__device__ void copy_q8k_codes(Stage<P>& st, const Cta& c, int b) {
  constexpr int kWords = 64;
  const int w = c.tid % kWords, s0 = c.tid / kWords;
  const int64_t off = b * kQ8KBytes + 4 + 4 * w;
  each_item<kN * kWords>(c.tid, [&](int k) {
    const int s = s0 + k * (kThreads / kWords);
    if (s < c.live) cp_async4(&st.b[s * P::kBPitch + w], c.xrow[s] + off);
  });
}

// The Q8_K-side B layout (IQ2_XXS, Q2_K). kRawX = false: each slot's 64 codes words of the block,
// word by word (copy_q8k_codes), at words 8 ks .. of step ks. kRawX = true: the slot's whole
// 292-byte block in 16-byte copies (copy_q8k_blocks), which takes a quarter of the copies: in a
// row of nb % 4 == 0 blocks, 16-byte aligned, block b starts 4 (b % 4) bytes past a 16-byte
// boundary, so 19 copies from that boundary hold it (the last block of a row, b % 4 == 3, ends
// exactly at the 19th; the others' 19th reaches into the next block of the same row), and its
// codes are words (b % 4) + 1 + 8 ks .. of the staged row; 19 units per row, an odd number, so the
// 8 rows x 4 words of a fragment load fall in 32 different banks.
template <bool kRawX>
struct Q8KSide {
  static constexpr bool kRawQ8K = kRawX;
  static constexpr int kUnits = 19;
  static constexpr int kBPitch = kRawX ? 4 * kUnits : kPitch;
  static_assert(!kRawX || (kUnits % 2 == 1 && 16 * kUnits >= kQ8KBytes + 12),
                "whole blocks at any 4-byte phase, an odd number of 16-byte units per row");
  __device__ static constexpr int b_word0(int ks) { return 8 * ks; }
  // The words to add to b_word0 for block b.
  __device__ static int b_shift(int b) { return kRawX ? b % 4 + 1 : 0; }
};

template <class P>
__device__ void copy_q8k_blocks(Stage<P>& st, const Cta& c, int b) {
  constexpr int kUnits = P::kUnits;
  const int64_t start = b * kQ8KBytes - 4 * (b % 4);  // 16-byte aligned (raw_q8k_fits)
  each_item<kN * kUnits>(c.tid, [&](int k) {
    const int i = c.tid + k * kThreads, s = i / kUnits, u = i % kUnits;
    if (s < c.live) cp_async16(&st.b[s * P::kBPitch + 4 * u], c.xrow[s] + start + 16 * u);
  });
}

// The live slots' Q8_K codes of block b, in P's layout (Q8KSide).
template <class P>
__device__ void copy_q8k(Stage<P>& st, const Cta& c, int b) {
  if constexpr (P::kRawQ8K) {
    copy_q8k_blocks(st, c, b);
  } else {
    copy_q8k_codes(st, c, b);
  }
}

// Where block b (of block_bytes bytes) of tile row r starts in the body plane (Cta::block: rows
// past the tile's last read the last again).
__device__ __forceinline__ const uint8_t* row_block(const Cta& c, int64_t block_bytes, int b,
                                                    int r) {
  return c.body + c.block(r, b) * block_bytes;
}

// ---- formats. Each has: kChunkBlocks (blocks per chunk), kBlockSteps (K steps per block), Raw
// (a chunk's weight bytes in a stage), copy (the cp.async of a chunk into a stage), kDecodes and
// decode (the stage's weights into the int8 A tile of Decoded), and the epilogues ----

// kRawX: the slots' rows are staged as the encoder wrote them, each chunk's 8 blocks (288 bytes:
// a 4-byte scale, then 32 codes, per block) in 18 copies of 16 bytes per slot, instead of 64
// copies of 4 bytes for the codes (which sit at offset 4 of their 36-byte block, too misaligned
// for 16-byte copies); block j's codes are then words 9 j + 1 .. 9 j + 8 of the slot's row, read
// in place by the B fragments. It needs 16-byte aligned chunks: every chunk whole (nb % 8 == 0)
// and the encoded rows and groups at multiples of 16 bytes (raw_x_fits).
// kRowTiles: 16-row tiles per warp (1: a 64-row CTA; 2: a 128-row CTA, each B fragment and pair
// of activation scales loaded once for two products).
template <bool kRawX, int kRowTiles_ = 1>
struct ImmaQ8_0T {
  using Fmt = FmtQ8_0;
  static constexpr int kRowTiles = kRowTiles_, kRows = kM * kRowTiles;
  static constexpr int kChunkBlocks = 8, kBlockSteps = 1;
  static constexpr bool kTables = false, kDecodes = false;
  static constexpr int kChunkBytes = kChunkBlocks * static_cast<int>(kActQ8_0Bytes);  // 288
  // Words per staged slot row: the chunk plus 16 bytes (raw: 19 units of 16 bytes, an odd number,
  // so the 8 rows x 4 words of a fragment load fall in 32 different banks).
  static constexpr int kBPitch = kRawX ? kChunkBytes / 4 + 4 : kPitch;
  static_assert(!kRawX || ((kBPitch / 4) % 2 == 1 && kChunkBytes % 16 == 0),
                "raw rows: whole 16-byte units, an odd number per staged row");
  // The first word of step ks's codes in a staged slot row.
  __device__ static constexpr int b_word0(int ks) { return kRawX ? 9 * ks + 1 : 8 * ks; }
  __device__ static int b_shift(int) { return 0; }
  // The words holding a row's f16 scales of a chunk: at most 5 (the first may start at an odd
  // half); 6 for an even stride that still spreads 8 rows over different banks.
  static constexpr int kScaleWords = 6;
  struct Raw {
    uint32_t a[kRows * kPitch];  // the weight codes: the A tile
    uint32_t dw[kRows][kScaleWords];
    // The slots' activation scales by block, so that the two slots of a C fragment's columns
    // (2t, 2t + 1) come in one 8-byte load (4 distinct pairs per warp: one wavefront).
    alignas(8) float xd[kChunkBlocks][kN];
  };
  struct SlotSide {};
  struct Decoded {};
  // The thread's items: weight codes, half h = tid % 2 of block j = (tid / 2) % 8 of rows
  // tid / 16 + 8 k; activation codes, word w = tid % 64 (block w / 8) of slots tid / 64 + 2 k;
  // activation scales, block tid % 8 of slots tid / 8 + 16 k (the first version's strided loops
  // gave every thread the same items).
  __device__ static void copy(Stage<ImmaQ8_0T>& st, const Cta& c, int b0, int kc) {
    constexpr int kCodeHalves = 2 * kChunkBlocks, kCodeWords = 8 * kChunkBlocks;
    const int j = (c.tid / 2) % kChunkBlocks, h = c.tid % 2;
    if (j < kc) {  // weight codes, 16 bytes
      const int r0 = c.tid / kCodeHalves;
      each_item<kRows * kCodeHalves>(c.tid, [&](int k) {
        const int r = r0 + k * (kThreads / kCodeHalves);
        cp_async16(&st.raw.a[r * kPitch + 8 * j + 4 * h], row_block(c, 32, b0 + j, r) + 16 * h);
      });
    }
    each_item<kRows * kScaleWords>(c.tid, [&](int k) {  // weight scales, as words
      const int i = c.tid + k * kThreads, r = i / kScaleWords, w = i % kScaleWords;
      const int64_t h0 = c.block(r, b0);
      if (w <= (h0 + kc - 1) / 2 - h0 / 2)
        cp_async4(&st.raw.dw[r][w], c.aux_word_of_half(h0) + 4 * w);
    });
    if constexpr (kRawX) {  // the slots' chunks as stored (kc is always kChunkBlocks here)
      constexpr int kUnits = kChunkBytes / 16;
      const int64_t off = b0 * kActQ8_0Bytes;
      each_item<kN * kUnits>(c.tid, [&](int k) {
        const int i = c.tid + k * kThreads, s = i / kUnits, u = i % kUnits;
        if (s < c.live) cp_async16(&st.b[s * kBPitch + 4 * u], c.xrow[s] + off + 16 * u);
      });
    } else {
      const int w = c.tid % kCodeWords, jw = w / 8;
      if (jw < kc) {  // activation codes
        const int s0 = c.tid / kCodeWords;
        const int64_t off = (b0 + jw) * kActQ8_0Bytes + 4 + 4 * (w % 8);
        each_item<kN * kCodeWords>(c.tid, [&](int k) {
          const int s = s0 + k * (kThreads / kCodeWords);
          if (s < c.live) cp_async4(&st.b[s * kBPitch + w], c.xrow[s] + off);
        });
      }
    }
    // The activation scales by block, pairs of slots side by side for the terms' 8-byte loads
    // (with kRawX they also arrive in the chunks above, a slot row apart).
    const int js = c.tid % kChunkBlocks;
    if (js < kc) {
      const int s0 = c.tid / kChunkBlocks;
      const int64_t off = (b0 + js) * kActQ8_0Bytes;
      each_item<kN * kChunkBlocks>(c.tid, [&](int k) {
        const int s = s0 + k * (kThreads / kChunkBlocks);
        if (s < c.live) cp_async4(&st.raw.xd[js][s], c.xrow[s] + off);
      });
    }
  }
  // Weight scale of tile row r, block j of the chunk; first = c.block(r, b0) & 1.
  __device__ static float row_scale(const Stage<ImmaQ8_0T>& st, int r, int first, int j) {
    const int i = first + j;
    return half_of_word(st.raw.dw[r][i / 2], i);
  }
};
template <class P>
inline constexpr bool kIsQ8_0 = false;
template <bool kRawX, int kRowTiles>
inline constexpr bool kIsQ8_0<ImmaQ8_0T<kRawX, kRowTiles>> = true;

// The decode forms the sign patterns with a population count (imma::iq2_sign_bits), so only the
// codebook is staged. kRawX: whole Q8_K blocks (Q8KSide).
template <bool kRawX = false>
struct ImmaIq2XxsT : Q8KSide<kRawX> {
  using Fmt = FmtIq2Xxs;
  static constexpr int kRowTiles = 1, kRows = kM;
  static constexpr int kChunkBlocks = 1, kBlockSteps = 8;
  static constexpr bool kTables = true, kDecodes = true;
  // Words per staged row: the 64-byte body plus 16 bytes, so that 8 rows' 16-byte reads fall in
  // different banks.
  static constexpr int kRawPitch = 20;
  struct Raw {
    uint32_t q[kM * kRawPitch];
    uint32_t dw[kM];  // the aux word holding the row's f16 d
  };
  struct SlotSide {
    float d;
  };
  struct RowSide {
    float d;
    uint32_t scales[2];  // 2s + 1 of group g in byte g % 4 of scales[g / 4]
  };
  struct Decoded {
    uint32_t a[kM * kPitch];
    RowSide rs[kM];
  };
  __device__ static void copy(Stage<ImmaIq2XxsT>& st, const Cta& c, int b, int) {
    copy_q8k(st, c, b);
    if (c.tid < c.live) cp_async4(&st.ss[c.tid].d, c.xrow[c.tid] + b * kQ8KBytes);
    const int q = c.tid % 4, r0 = c.tid / 4;  // 16 bytes q of rows tid / 4 + 32 k
    each_item<kM * 4>(c.tid, [&](int k) {
      const int r = r0 + k * (kThreads / 4);
      cp_async16(&st.raw.q[r * kRawPitch + 4 * q], row_block(c, FmtIq2Xxs::kBody, b, r) + 16 * q);
    });
    if (c.tid < kM) cp_async4(&st.raw.dw[c.tid], c.aux_word_of_half(c.block(c.tid, b)));
  }
  // Thread tid decodes half tid / 64 (groups 4h .. 4h + 3) of tile row tid % 64.
  __device__ static void decode(const Stage<ImmaIq2XxsT>& st, Decoded& dec, const Cta& c, int b,
                                const Iq2Lookup& t) {
    const int r = c.tid % kM, h = c.tid / kM;
    const auto* q = reinterpret_cast<const uint4*>(&st.raw.q[r * kRawPitch + 8 * h]);
    const uint4 q0 = q[0], q1 = q[1];
    const uint32_t in[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
    uint32_t out[32];
    dec.rs[r].scales[h] = imma::iq2xxs_decode_half(in, t.grid, out);
    if (h == 0) dec.rs[r].d = half_of_word(st.raw.dw[r], c.block(r, b));
    uint4* dst = reinterpret_cast<uint4*>(&dec.a[r * kPitch + 32 * h]);
#pragma unroll
    for (int i = 0; i < 8; ++i)
      dst[i] = make_uint4(out[4 * i], out[4 * i + 1], out[4 * i + 2], out[4 * i + 3]);
  }
};
template <class P>
inline constexpr bool kIsIq2 = false;
template <bool kRawX>
inline constexpr bool kIsIq2<ImmaIq2XxsT<kRawX>> = true;

// kRawX: whole Q8_K blocks (Q8KSide).
template <bool kRawX>
struct ImmaQ2KT : Q8KSide<kRawX> {
  using Fmt = FmtQ2K;
  static constexpr int kRowTiles = 1, kRows = kM;
  static constexpr int kChunkBlocks = 1, kBlockSteps = 8;
  static constexpr bool kTables = false, kDecodes = true;
  // Words per staged row: the 80-byte body (scales, then codes); 8 rows' 16-byte reads at a
  // 20-word stride fall in different banks.
  static constexpr int kRawPitch = 20;
  struct Raw {
    uint32_t q[kM * kRawPitch];
    uint32_t dd[kM];  // f16 d (low half), dmin (high half)
  };
  struct SlotSide {
    float d;
    uint32_t bsums[8];  // the 16 int16 bsums
  };
  struct RowSide {
    float d, dmin;
    uint32_t mins[4];  // the 16 sub-blocks' 4-bit mins, one per byte
  };
  struct Decoded {
    uint32_t a[kM * kPitch];
    RowSide rs[kM];
  };
  __device__ static void copy(Stage<ImmaQ2KT>& st, const Cta& c, int b, int) {
    copy_q8k(st, c, b);
    each_item<kN * 9>(c.tid, [&](int k) {
      const int i = c.tid + k * kThreads, s = i / 9, w = i % 9;
      if (s >= c.live) return;
      if (w == 0) {
        cp_async4(&st.ss[s].d, c.xrow[s] + b * kQ8KBytes);
      } else {
        cp_async4(&st.ss[s].bsums[w - 1], c.xrow[s] + b * kQ8KBytes + kQ8KBsums + 4 * (w - 1));
      }
    });
    each_item<kM * 5>(c.tid, [&](int k) {
      const int i = c.tid + k * kThreads, r = i / 5, q = i % 5;
      cp_async16(&st.raw.q[r * kRawPitch + 4 * q], row_block(c, FmtQ2K::kBody, b, r) + 16 * q);
    });
    if (c.tid < kM) cp_async4(&st.raw.dd[c.tid], c.aux + 4 * c.block(c.tid, b));
  }
  // Thread tid decodes half tid / 64 (sub-blocks 8h .. 8h + 7) of tile row tid % 64.
  __device__ static void decode(const Stage<ImmaQ2KT>& st, Decoded& dec, const Cta& c, int,
                                const Iq2Lookup&) {
    const int r = c.tid % kM, h = c.tid / kM;
    const uint32_t* row = &st.raw.q[r * kRawPitch];  // scales (4 words), then the codes
    const auto* qv = reinterpret_cast<const uint4*>(row + 4 + 8 * h);
    const uint4 q0 = qv[0], q1 = qv[1];
    const uint2 scv = *reinterpret_cast<const uint2*>(row + 2 * h);
    const uint32_t q[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
    const uint32_t sc[2] = {scv.x, scv.y};
    uint32_t out[32], mins[2];
    imma::q2k_decode_half(q, sc, out, mins);
    dec.rs[r].mins[2 * h] = mins[0];
    dec.rs[r].mins[2 * h + 1] = mins[1];
    if (h == 0) {
      const uint32_t dd = st.raw.dd[r];
      dec.rs[r].d = f16_bits(static_cast<uint16_t>(dd & 0xffffu));
      dec.rs[r].dmin = f16_bits(static_cast<uint16_t>(dd >> 16));
    }
    uint4* dst = reinterpret_cast<uint4*>(&dec.a[r * kPitch + 32 * h]);
#pragma unroll
    for (int i = 0; i < 8; ++i)
      dst[i] = make_uint4(out[4 * i], out[4 * i + 1], out[4 * i + 2], out[4 * i + 3]);
  }
};

using ImmaQ2K = ImmaQ2KT<false>;
template <class P>
inline constexpr bool kIsQ2K = false;
template <bool kRawX>
inline constexpr bool kIsQ2K<ImmaQ2KT<kRawX>> = true;

// The thread's outputs of one row tile rt of its warp: acc[nt][i] is C element i of slot tile nt
// (row 16 (kRowTiles warp + rt) + frag_c_row(lane, i), slot 8 nt + frag_c_col(lane, i));
// part[nt][i] the integer sums of the current block (IQ2_XXS: bsum so far; Q2_K: the C
// accumulator itself).
struct Outputs {
  float acc[kNTiles][4];
  int part[kNTiles][4];
};

// The first tile row of row tile rt of a warp.
template <class P>
__device__ __forceinline__ int tile_row0(int warp, int rt) {
  return 16 * (P::kRowTiles * warp + rt);
}

// The products of one chunk (kc blocks from block b0) and, as each block completes, its terms.
// kFull: every slot tile is live and the chunk is whole (no run-time bounds in the loops).
template <class P, bool kFull>
__device__ void multiply_chunk(const Stage<P>& st, const typename P::Decoded& dec, const Cta& c,
                               int b0, int kc, int nv, int warp, int lane,
                               Outputs (&ot)[P::kRowTiles]) {
  constexpr int kRt = P::kRowTiles;
  const uint32_t* at[kRt];
  int r_lo[kRt], r_hi[kRt];
  int first_lo[kRt] = {}, first_hi[kRt] = {};  // Q8_0: the parity of the rows' first scale
#pragma unroll
  for (int rt = 0; rt < kRt; ++rt) {
    const int base = tile_row0<P>(warp, rt);
    if constexpr (P::kDecodes) {
      at[rt] = dec.a + base * kPitch;
    } else {
      at[rt] = st.raw.a + base * kPitch;
    }
    r_lo[rt] = base + imma::frag_c_row(lane, 0);
    r_hi[rt] = r_lo[rt] + 8;
    if constexpr (kIsQ8_0<P>) {
      first_lo[rt] = static_cast<int>(c.block(r_lo[rt], b0) & 1);
      first_hi[rt] = static_cast<int>(c.block(r_hi[rt], b0) & 1);
    }
  }
  const int steps = kc * P::kBlockSteps;
  const int bshift = P::b_shift(b0);  // where block b0's codes start in the staged slot rows
  // The products of step ks into cc (Q2_K: into the block's accumulator); each B fragment is
  // loaded once for the warp's row tiles.
  const auto products = [&](int ks, int(&cc)[kRt][kNTiles][4]) {
    uint32_t a[kRt][4];
#pragma unroll
    for (int rt = 0; rt < kRt; ++rt) {
#pragma unroll
      for (int r = 0; r < 4; ++r) a[rt][r] = at[rt][imma::frag_a_word(lane, r, kPitch) + 8 * ks];
    }
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
      if (!kFull && nt >= nv) break;
      const uint32_t* bt = st.b + nt * 8 * P::kBPitch + P::b_word0(ks) + bshift;
      const uint32_t b0w = bt[imma::frag_b_word(lane, 0, P::kBPitch)];
      const uint32_t b1w = bt[imma::frag_b_word(lane, 1, P::kBPitch)];
#pragma unroll
      for (int rt = 0; rt < kRt; ++rt) {
        if constexpr (kIsQ2K<P>) {
          mma_s8(ot[rt].part[nt], a[rt], b0w, b1w);  // the block's isum accumulates over 8 steps
        } else {
          mma_s8_fresh(cc[rt][nt], a[rt], b0w, b1w);
        }
      }
    }
  };
  // What step ks's sums add to the outputs (Q8_0: block ks's float terms, in block order;
  // IQ2_XXS: group ks's sums times 2s + 1, exact integers).
  const auto terms = [&](int ks, const int(&cc)[kRt][kNTiles][4]) {
    if constexpr (kIsQ8_0<P>) {
      float w_lo[kRt], w_hi[kRt];
#pragma unroll
      for (int rt = 0; rt < kRt; ++rt) {
        w_lo[rt] = P::row_scale(st, r_lo[rt], first_lo[rt], ks);
        w_hi[rt] = P::row_scale(st, r_hi[rt], first_hi[rt], ks);
      }
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt) {
        if (!kFull && nt >= nv) break;
        const int s = nt * 8 + imma::frag_c_col(lane, 0);
        const float2 xs = *reinterpret_cast<const float2*>(&st.raw.xd[ks][s]);
        const float x0 = xs.x, x1 = xs.y;
#pragma unroll
        for (int rt = 0; rt < kRt; ++rt) {
          float(&acc)[4] = ot[rt].acc[nt];
          const int(&sums)[4] = cc[rt][nt];
          acc[0] = planar::add_term(acc[0], FmtQ8_0::from_sums(w_lo[rt], x0, sums[0]));
          acc[1] = planar::add_term(acc[1], FmtQ8_0::from_sums(w_lo[rt], x1, sums[1]));
          acc[2] = planar::add_term(acc[2], FmtQ8_0::from_sums(w_hi[rt], x0, sums[2]));
          acc[3] = planar::add_term(acc[3], FmtQ8_0::from_sums(w_hi[rt], x1, sums[3]));
        }
      }
    } else if constexpr (kIsIq2<P>) {
      static_assert(kRt == 1, "IQ2_XXS: one row tile per warp");
      const int shift = 8 * (ks % 4);
      const int g_lo = static_cast<int>((dec.rs[r_lo[0]].scales[ks / 4] >> shift) & 255u);
      const int g_hi = static_cast<int>((dec.rs[r_hi[0]].scales[ks / 4] >> shift) & 255u);
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt) {
        if (!kFull && nt >= nv) break;
        ot[0].part[nt][0] += g_lo * cc[0][nt][0];
        ot[0].part[nt][1] += g_lo * cc[0][nt][1];
        ot[0].part[nt][2] += g_hi * cc[0][nt][2];
        ot[0].part[nt][3] += g_hi * cc[0][nt][3];
      }
    }
  };
  // (Issuing step ks + 1's Q8_0 products before step ks's terms prefilled more slowly on the
  // H200 and was removed.)
  int cc[kRt][kNTiles][4];
#pragma unroll
  for (int ks = 0; ks < kSteps; ++ks) {
    if (!kFull && ks >= steps) break;
    products(ks, cc);
    terms(ks, cc);
  }
  if constexpr (kIsIq2<P>) {  // the block (the chunk) is complete
    Outputs& o = ot[0];
    const float w_lo = dec.rs[r_lo[0]].d, w_hi = dec.rs[r_hi[0]].d;
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
      if (!kFull && nt >= nv) break;
      const int s = nt * 8 + imma::frag_c_col(lane, 0);
      const float x0 = st.ss[s].d, x1 = st.ss[s + 1].d;
      o.acc[nt][0] += FmtIq2Xxs::from_sums(w_lo, x0, o.part[nt][0]);
      o.acc[nt][1] += FmtIq2Xxs::from_sums(w_lo, x1, o.part[nt][1]);
      o.acc[nt][2] += FmtIq2Xxs::from_sums(w_hi, x0, o.part[nt][2]);
      o.acc[nt][3] += FmtIq2Xxs::from_sums(w_hi, x1, o.part[nt][3]);
      o.part[nt][0] = o.part[nt][1] = o.part[nt][2] = o.part[nt][3] = 0;
    }
  } else if constexpr (kIsQ2K<P>) {
    static_assert(kRt == 1, "Q2_K: one row tile per warp");
    Outputs& o = ot[0];
    uint32_t m_lo[4], m_hi[4];
#pragma unroll
    for (int k = 0; k < 4; ++k)
      m_lo[k] = dec.rs[r_lo[0]].mins[k], m_hi[k] = dec.rs[r_hi[0]].mins[k];
    const float d_lo = dec.rs[r_lo[0]].d, dmin_lo = dec.rs[r_lo[0]].dmin;
    const float d_hi = dec.rs[r_hi[0]].d, dmin_hi = dec.rs[r_hi[0]].dmin;
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
      if (!kFull && nt >= nv) break;
#pragma unroll
      for (int j = 0; j < 2; ++j) {  // C elements j (row r_lo) and 2 + j (row r_hi): slot s
        const int s = nt * 8 + imma::frag_c_col(lane, j);
        uint32_t bs[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) bs[k] = st.ss[s].bsums[k];
        const float xd = st.ss[s].d;
        o.acc[nt][j] +=
            FmtQ2K::from_sums(xd, d_lo, dmin_lo, o.part[nt][j], imma::q2k_summs(m_lo, bs));
        o.acc[nt][2 + j] +=
            FmtQ2K::from_sums(xd, d_hi, dmin_hi, o.part[nt][2 + j], imma::q2k_summs(m_hi, bs));
        o.part[nt][j] = o.part[nt][2 + j] = 0;
      }
    }
  }
}

// Dynamic shared memory of a CTA: kS stages, then the decoded A tile.
template <class P, int kS>
constexpr size_t smem_bytes() {
  return kS * sizeof(Stage<P>) + (P::kDecodes ? sizeof(typename P::Decoded) : 0);
}

// Grid: x = slot tiles (or wide groups), y = row tiles, so the CTAs that share a weight tile run
// side by side and read it from HBM about once. kS stages: chunks ch + 1 .. ch + kS - 1 are in
// flight while chunk ch is multiplied.
template <class P, int kS>
__global__ void __launch_bounds__(kThreads, 2) imma_kernel(const ImmaProduct p) {
  kernel_begin();
  static_assert(kS >= 2, "at least double buffering");
  extern __shared__ __align__(16) uint8_t smem[];
  auto* stages = reinterpret_cast<Stage<P>*>(smem);
  auto& dec = *reinterpret_cast<typename P::Decoded*>(smem + kS * sizeof(Stage<P>));
  __shared__ const uint8_t* xrow[kN];
  __shared__ int ids[kN];
  __shared__ uint64_t grid_s[P::kTables ? 256 : 1];
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t o0 = static_cast<int64_t>(blockIdx.y) * P::kRows;

  // The CTA's slots: order[start ..] (or start ..), ns of them, all of matrix e.
  int start = 0, ns = 0, e = 0;
  if (p.groups.order == nullptr) {
    start = static_cast<int>(blockIdx.x) * kN;
    ns = min(kN, p.n_slots - start);
  } else {
    const int g = static_cast<int>(blockIdx.x);
    const int32_t* gf = p.groups.wide_first;
    if (g >= gf[p.n_matrices]) return;  // uniform per CTA
    e = group_expert(gf, p.n_matrices, g);
    start = p.groups.first[e] + (g - gf[e]) * kN;
    ns = min(kN, p.groups.first[e + 1] - start);
  }
  if (ns <= 0 || e < 0 || e >= p.n_matrices) __trap();  // a grouping bug: never read wild
  if (tid < kN) {  // slots past ns repeat the last one (their results are never stored)
    const int k = start + min(tid, ns - 1);
    const int id = p.groups.order != nullptr ? p.groups.order[k] : k;
    ids[tid] = id;
    const int64_t r = p.rows != nullptr ? p.rows[id] : id;
    xrow[tid] = p.enc + r * p.enc_row_bytes + (o0 / p.rows_per_group) * p.enc_group_bytes;
  }
  if constexpr (P::kTables) {
    for (int i = tid; i < 256; i += kThreads) grid_s[i] = iq2::kIq2xxsGrid[i];
  }
  __syncthreads();
  const Iq2Lookup tables{grid_s, nullptr};  // IQ2_XXS forms its signs without the table
  const int nv = (ns + 7) / 8;              // slot tiles with a live slot
  const Cta c{p.body,
              p.aux,
              p.nb,
              static_cast<int64_t>(e) * p.mat_rows + o0,
              static_cast<int>(p.mat_rows - o0 < P::kRows ? p.mat_rows - o0 : P::kRows) - 1,
              xrow,
              8 * nv,
              tid};
  const int warp = tid / 32, lane = tid % 32;
  Outputs o[P::kRowTiles];
#pragma unroll
  for (int rt = 0; rt < P::kRowTiles; ++rt) {
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) o[rt].acc[nt][i] = 0.0f, o[rt].part[nt][i] = 0;
    }
  }

  const int n_chunks = (p.nb + P::kChunkBlocks - 1) / P::kChunkBlocks;
  const auto blocks_of = [&](int ch) { return min(P::kChunkBlocks, p.nb - ch * P::kChunkBlocks); };
  // Every iteration commits one copy group (empty past the last chunk), so "all but the newest
  // kS - 2 groups complete" always means "this thread's copies of chunk ch have landed".
#pragma unroll
  for (int k = 0; k < kS - 1; ++k) {
    if (k < n_chunks) P::copy(stages[k], c, k * P::kChunkBlocks, blocks_of(k));
    cp_async_commit();
  }
  for (int ch = 0; ch < n_chunks; ++ch) {
    cp_async_wait<kS - 2>();
    // Every thread's copies of chunk ch have landed, and every warp is past chunk ch - 1 (its
    // products and decode): its stage and the decoded tile may be rewritten.
    __syncthreads();
    const int nx = ch + kS - 1;
    if (nx < n_chunks) P::copy(stages[nx % kS], c, nx * P::kChunkBlocks, blocks_of(nx));
    cp_async_commit();
    const Stage<P>& st = stages[ch % kS];
    const int b0 = ch * P::kChunkBlocks;
    if constexpr (P::kDecodes) {
      P::decode(st, dec, c, b0, tables);
      __syncthreads();
    }
    const int kc = blocks_of(ch);
    if (nv == kNTiles && kc == P::kChunkBlocks) {
      multiply_chunk<P, true>(st, dec, c, b0, kc, nv, warp, lane, o);
    } else {
      multiply_chunk<P, false>(st, dec, c, b0, kc, nv, warp, lane, o);
    }
  }
  cp_async_wait<0>();  // no copy outlives the CTA (the groups past the last chunk are empty)

#pragma unroll
  for (int rt = 0; rt < P::kRowTiles; ++rt) {
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
      if (nt >= nv) break;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int row = tile_row0<P>(warp, rt) + imma::frag_c_row(lane, i);
        const int s = nt * 8 + imma::frag_c_col(lane, i);
        if (s < ns && o0 + row < p.mat_rows)
          p.y[static_cast<int64_t>(ids[s]) * p.y_stride + o0 + row] =
              P::Fmt::finish(o[rt].acc[nt][i]);
      }
    }
  }
}

template <class P, int kS>
void launch_stages(const dim3& grid, const ImmaProduct& p, cudaStream_t stream) {
  constexpr size_t kSmem = smem_bytes<P, kS>();
  DS4_CUDA_CHECK(cudaFuncSetAttribute(
      imma_kernel<P, kS>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSmem)));
  launch(imma_kernel<P, kS>, grid, kThreads, kSmem, stream, p);
  DS4_CUDA_CHECK_LAUNCH();
}

// The stages of the ring. On the H200 two prefilled Flash q2 fastest: three were slower (only two
// Q8_0 CTAs fit on an SM), and so were three for the 2-bit formats with two for Q8_0.
constexpr int kStages = 2;

template <class P>
void launch(const ImmaProduct& p, cudaStream_t stream) {
  const int64_t tiles = (p.mat_rows + P::kRows - 1) / P::kRows;
  const int64_t slot_tiles =
      p.groups.order != nullptr ? p.groups.max_wide_groups : (p.n_slots + kN - 1) / kN;
  DS4_CHECK_MSG(tiles <= kMaxGridYZ && slot_tiles >= 1 && slot_tiles <= INT_MAX,
                "imma matmul: grid %lld x %lld", static_cast<long long>(slot_tiles),
                static_cast<long long>(tiles));
  const dim3 grid(static_cast<unsigned>(slot_tiles), static_cast<unsigned>(tiles));
  launch_stages<P, kStages>(grid, p, stream);
}

// Whether every slot's encoded activation row, and its group's share, starts 16-byte aligned.
bool enc_rows_aligned16(const ImmaProduct& p) {
  return aligned16(p.enc) && p.enc_row_bytes % 16 == 0 && p.enc_group_bytes % 16 == 0;
}

// Q8_0 activations can be staged as whole 16-byte aligned chunks (ImmaQ8_0T<true>): every chunk
// whole and the rows 16-byte aligned.
bool raw_x_fits(const ImmaProduct& p) {
  return p.nb % ImmaQ8_0T<true>::kChunkBlocks == 0 && enc_rows_aligned16(p);
}

// Q8_K activations staged as whole blocks (Q8KSide<true>): rows of nb % 4 == 0 blocks, every
// slot's row and its group's share 16-byte aligned (faster prefill on the H200); other rows take
// the word copies.
bool raw_q8k_fits(const ImmaProduct& p) { return p.nb % 4 == 0 && enc_rows_aligned16(p); }

// Q8_0 row tiles per warp: 2 gives 128-row CTAs where the output row groups allow them (groups of
// a multiple of 128 rows, or one group; faster prefill on the H200), else 1 (64-row CTAs).
constexpr int kQ8RowTiles = 2;
int q8_row_tiles(const ImmaProduct& p) {
  constexpr int rows = kM * kQ8RowTiles;
  return p.rows_per_group % rows == 0 || p.rows_per_group >= p.mat_rows ? kQ8RowTiles : 1;
}

}  // namespace

bool imma_has_format(gguf::GgufType t) {
  return t == GgufType::kQ8_0 || t == GgufType::kQ2_K || t == GgufType::kIQ2_XXS;
}

void launch_matmul_imma(const ImmaProduct& p, cudaStream_t stream) {
  DS4_CHECK_MSG(imma_has_format(p.type), "imma matmul: unsupported type");
  DS4_CHECK_MSG(p.n_slots > 0 && p.nb > 0 && p.mat_rows > 0 && p.n_matrices > 0 &&
                    p.rows_per_group > 0 && p.enc_row_bytes % 4 == 0,
                "imma matmul: %d slots, %d blocks per row, %lld rows", p.n_slots, p.nb,
                static_cast<long long>(p.mat_rows));
  DS4_CHECK_MSG(p.rows_per_group % kM == 0 || p.rows_per_group >= p.mat_rows,
                "imma matmul: row groups of %d rows", p.rows_per_group);
  DS4_CHECK_MSG(
      p.groups.order == nullptr || (p.groups.first != nullptr && p.groups.wide_first != nullptr),
      "imma matmul: slot groups without wide groups");
  DS4_CHECK_MSG(aligned16(p.body) && aligned16(p.aux),
                "imma matmul: planes not 16-byte aligned (cp.async)");
  switch (p.type) {
    case GgufType::kQ8_0: {
      const bool two = q8_row_tiles(p) == 2, raw = raw_x_fits(p);
      if (two) {
        raw ? launch<ImmaQ8_0T<true, 2>>(p, stream) : launch<ImmaQ8_0T<false, 2>>(p, stream);
      } else {
        raw ? launch<ImmaQ8_0T<true>>(p, stream) : launch<ImmaQ8_0T<false>>(p, stream);
      }
      break;
    }
    case GgufType::kQ2_K:
      if (raw_q8k_fits(p)) {
        launch<ImmaQ2KT<true>>(p, stream);
      } else {
        launch<ImmaQ2K>(p, stream);
      }
      break;
    default:
      if (raw_q8k_fits(p)) {
        launch<ImmaIq2XxsT<true>>(p, stream);
      } else {
        launch<ImmaIq2XxsT<false>>(p, stream);
      }
      break;
  }
}

}  // namespace ds4::backend::cuda
