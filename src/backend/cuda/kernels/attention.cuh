// src/backend/cuda/kernels/attention.cuh: the cache-dependent steps of an attention sublayer on
// the device (model.md §4.5-4.9) for a batch of n consecutive token rows of one sequence, at
// positions p0 .. p0 + n - 1: RoPE + FP8 simulation + raw-window store, compressor pooling and
// frontier update, indexer query preparation, scores and top-k, and sink attention with inverse
// RoPE. Every per-row quantity (window size, compressed rows visible, whether the indexer runs)
// follows from the row's position, so one launch per step serves the whole batch; each row's
// arithmetic is the CPU reference's, in its order, so a batch computes what row-by-row decode
// computes, bit for bit. A decode step is the batch of one row.
//
// The raw window lives in a ring of ring_cap >= raw_cap + n - 1 rows, the row of position p in
// slot p % ring_cap; a row attends to the last min(raw_cap, p + 1) positions.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/backend.h"
#include "gguf/types.h"

namespace ds4::backend::cuda {

struct RopeArg {
  float inv_freq[32];
};

// The rows of a batch: positions p0 .. p0 + n - 1.
struct RowSpan {
  int p0 = 0;
  int n = 0;
};

// Rotates the tails of the n_head q heads and of kv of every row at its position; simulates FP8
// on kv dims 0..447 (qat), rounds kv through f16 (f16_rows) and stores it in its ring slot.
// Row t of q / kv starts at q + t * q_stride / kv + t * kv_stride.
void launch_rope_qkv_store(float* q, int64_t q_stride, int n_head, float* kv, int64_t kv_stride,
                           const RopeArg& rope, RowSpan rows, bool qat, bool f16_rows, float* ring,
                           int ring_cap, cudaStream_t s);

// One compressor lane (model.md §4.7) over a batch. ratio 4 (overlapping windows, frontier of 8
// rows of width 2 * hd) or 128 (frontier of 128 rows of width hd). Pools every window that ends
// in the batch into dst (window w ending at the w-th boundary of the batch -> dst + w * hd),
// finishes those rows (RMSNorm with `norm`, RoPE at the window start, FP8 (attention lane) or
// Hadamard + FP4 (indexer lane) when qat, f16 rounding when f16_rows), and leaves the frontier
// (st_kv / st_score) as row-by-row processing would. kvc / gate rows: width floats at
// stride kvc_stride / gate_stride; ape: [ratio][width], F16 or F32. Returns the rows emitted.
struct CompressorLane {
  int ratio = 0;
  int hd = 0;
  float* st_kv = nullptr;
  float* st_score = nullptr;
  const float* kvc = nullptr;
  int64_t kvc_stride = 0;
  const float* gate = nullptr;
  int64_t gate_stride = 0;
  const void* ape = nullptr;
  gguf::GgufType ape_type = gguf::GgufType::kF32;
  const float* norm = nullptr;
  bool indexer_lane = false;
  // Speculation: with mark >= 0 (the position the sequence was marked at, Backend::mark_sequence)
  // the batch also logs each of its positions' (kv, score) frontier values into row q - mark of
  // log_kv / log_score (log_rows rows of width floats) and saves the frontier rows it overwrites,
  // as they were at the mark, into save_kv / save_score (the frontier's shape): what
  // launch_lane_rewind needs.
  int mark = -1;
  int log_rows = 0;
  float* save_kv = nullptr;
  float* save_score = nullptr;
  float* log_kv = nullptr;
  float* log_score = nullptr;
};
int launch_compressor(const CompressorLane& lane, RowSpan rows, const RopeArg& rope, bool qat,
                      bool f16_rows, float* dst, cudaStream_t s);
// The lane's frontier (st_kv / st_score) taken back to what it was after position to - 1, when
// positions lane.mark .. end - 1 were stored since the mark (by batches that logged them, see
// CompressorLane::mark): exactly the frontier of a sequence that never stored to .. end - 1.
// Needs only the lane's frontier, mark, log and save fields.
void launch_lane_rewind(const CompressorLane& lane, int to, int end, cudaStream_t s);

// RoPE at each row's position and (qat) Hadamard + FP4 on each of the n_ih 128-wide indexer
// query heads of every row (row t at iq + t * stride).
void launch_indexer_query(float* iq, int64_t stride, int n_ih, const RopeArg& rope, RowSpan rows,
                          bool qat, cudaStream_t s);

// For each row t whose position p sees n_t = (p + 1) / 4 compressed indexer rows with
// n_t > top_k: scores[t * n_stride + c] = sum_h max(0, keys[c] . iq_h) * w[h] * wscale for
// c < n_t, then out[t * top_k ..] = the top_k best rows (select_top_k's rule). Rows with
// n_t <= top_k are skipped. iq row t at iq + t * iq_stride, w row t at w + t * w_stride.
// n_stride >= (p0 + n) / 4; scores is scratch of n * n_stride floats. `codes`: null, or scratch
// of indexer_code_bytes((p0 + n) / 4, n, n_ih) bytes (16-byte aligned) when the keys and the
// queries hold FP4-simulated values (Numerics::qat_simulation): a batch (n >= kIndexerBatchRows) of
// such rows is scored on the int8 tensor cores (indexer_imma.cuh; the float kernels' scores
// wherever the float sums are exact), other batches and decode rows by float kernels.
inline constexpr int kIndexerBatchRows = 16;
size_t indexer_code_bytes(int n_keys, int n_rows, int n_ih);
void launch_indexer_select(const float* keys, const float* iq, int64_t iq_stride, const float* w,
                           int64_t w_stride, float wscale, int n_ih, int top_k, RowSpan rows,
                           int n_stride, void* codes, float* scores, int32_t* out, cudaStream_t s);

// Sink attention of every row's n_head queries over its raw window and its compressed rows, then
// inverse RoPE at its position. Compressed rows of row t at position p: none when ratio == 0;
// when ratio == 4 and (p + 1) / 4 > top_k, the top_k rows listed at visible + t * top_k; else
// rows 0 .. (p + 1) / ratio - 1. scratch: attention_scratch_floats(n_head, max_rows, n) floats,
// max_rows >= every row's window + compressed rows. Output row t at out + t * out_stride. A batch
// (rows.n >= 16) takes attention_flash.cuh's tensor-core kernel, whose rows must fit it
// (attention_flash_fits: 16-byte aligned; float up to rounding); decode rows take
// attention_split.cuh's kernels (float rounding differs).
struct AttentionGeometry {
  int n_head = 0;
  int raw_cap = 0;
  int ring_cap = 0;
  int ratio = 0;
  int top_k = 0;
  int max_rows = 0;
  bool f16_values = false;  // every cached row holds f16 values (Numerics::f16_rows)
};
// The scratch floats launch_attention (n rows) needs when no row attends to more than max_rows
// cached rows (decode rows: the split kernels' partial sums; batches: none).
int64_t attention_scratch_floats(int n_head, int max_rows, int n);
// The same for launch_attention_seqs (n <= kMaxSeqRows rows, all on the split kernels, however
// many: a step of 16 or more sequences sized by attention_scratch_floats got no scratch).
int64_t attention_seqs_scratch_floats(int n_head, int max_rows, int n);
// scratch holds scratch_floats floats (checked against what the rows need).
void launch_attention(const float* q, int64_t q_stride, const AttentionGeometry& g,
                      const float* ring, const float* comp, const int32_t* visible,
                      const float* sinks, const RopeArg& rope, RowSpan rows, float* scratch,
                      int64_t scratch_floats, float* out, int64_t out_stride, cudaStream_t s);

// A batched decode step's rows, one per sequence, in one launch (at most kMaxSeqRows; batch row
// t of q / kv / out): row t at position pos[t] of its sequence, whose raw ring (g.ring_cap rows)
// is ring[t] and compressed rows comp[t]; visible[t]: its indexer's top_k picks (read only
// where (pos[t] + 1) / 4 > top_k). Each row's arithmetic is the one-run launchers', so a row
// gets what its sequence alone would.
inline constexpr int kMaxSeqRows = 32;
struct SeqRows {
  int n = 0;
  int pos[kMaxSeqRows];
  float* ring[kMaxSeqRows];
  const float* comp[kMaxSeqRows];
  const int32_t* visible[kMaxSeqRows];
};
// One row of each of n sequences (a batched decode step), one compressor lane each: lane[i] at
// position pos[i], its emitted row (when pos[i] + 1 ends a window) at dst[i]; the lanes share
// one layer's ratio, hd, ape, norm and indexer_lane (checked). What launch_compressor does for
// each, in three launches for all: the emitted rows' pooling, their finish, the frontiers'
// update. emitted[i]: the rows lane i emitted (0 or 1).
struct CompressorSeqs {
  int n = 0;
  CompressorLane lane[kMaxSeqRows];
  int pos[kMaxSeqRows] = {};
  float* dst[kMaxSeqRows] = {};
};
void launch_compressor_seqs(const CompressorSeqs& seqs, const RopeArg& rope, bool qat,
                            bool f16_rows, int* emitted, cudaStream_t s);
void launch_rope_qkv_store_seqs(float* q, int64_t q_stride, int n_head, float* kv,
                                int64_t kv_stride, const RopeArg& rope, const SeqRows& rows,
                                bool qat, bool f16_rows, int ring_cap, cudaStream_t s);
// scratch: scratch_floats >= attention_seqs_scratch_floats(n_head, g.max_rows, rows.n) floats
// (checked), g.max_rows >= every row's rows.
void launch_attention_seqs(const float* q, int64_t q_stride, const AttentionGeometry& g,
                           const SeqRows& rows, const float* sinks, const RopeArg& rope,
                           float* scratch, int64_t scratch_floats, float* out, int64_t out_stride,
                           cudaStream_t s);

}  // namespace ds4::backend::cuda
