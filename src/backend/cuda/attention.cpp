// src/backend/cuda/attention.cpp: the host side of an attention op on the device. The rows of a
// batch are cut into runs of consecutive positions of one sequence (bounded by the raw ring's
// spare rows and the scratch sizes) and each run goes through the batched kernels
// (kernels/attention.cuh) step by step: RoPE + FP8 + raw store, compressor lanes, indexer scores
// and top-k, sink attention. Every per-row quantity follows from the row's position, so nothing
// here waits for the device; a run computes what the rows would one by one, bit for bit. The runs
// of a step of several sequences (the server's batched decode) go to side streams, so that the
// sequences' small kernels overlap; a run's results do not depend on its stream. A step of one
// row per sequence launches its RoPE stores and its sink attention once for all rows
// (attend_sequences).
#include "backend/cuda/kernels/attention.cuh"

#include <algorithm>
#include <cmath>
#include <utility>

#include "backend/cuda/check.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/row_rules.h"

namespace ds4::backend::cuda {
namespace {

constexpr int kHd = 512;
constexpr int kIhd = 128;
// Scratch bound per run (floats) for the attention scores and the indexer scores: 256 MiB each.
constexpr int64_t kMaxScratchFloats = int64_t{1} << 26;

RopeArg rope_arg(const RopeParams& p) {
  RopeArg a;
  std::copy(p.inv_freq.begin(), p.inv_freq.end(), a.inv_freq);
  return a;
}

// Compressed rows a row may attend to at most, for rows up to position p_end - 1.
int max_compressed(const AttentionLayer& l, int p_end) {
  if (l.ratio == 0) return 0;
  const int all = p_end / l.ratio;
  return l.ratio == 4 ? std::min(all, l.index_top_k) : all;
}

// Floats a scratch allocation holds.
int64_t floats_of(const DeviceMemory& m) { return static_cast<int64_t>(m.bytes() / sizeof(float)); }

// A compressor lane of the run whose first row is batch row r0.
CompressorLane lane_of(int ratio, int hd, DeviceMemory& st_kv, DeviceMemory& st_score, Act kvc,
                       Act gate, int64_t r0, const Weight& ape, const Weight& norm,
                       bool indexer_lane) {
  CompressorLane lane;
  lane.ratio = ratio;
  lane.hd = hd;
  lane.st_kv = st_kv.floats();
  lane.st_score = st_score.floats();
  lane.kvc = kvc.row(r0);
  lane.kvc_stride = kvc.cols;
  lane.gate = gate.row(r0);
  lane.gate_stride = gate.cols;
  lane.ape = ape.data;
  lane.ape_type = ape.type;
  lane.norm = static_cast<const float*>(norm.data);
  lane.indexer_lane = indexer_lane;
  return lane;
}

// A run's rows past what a marked sequence's lane logs hold: the mark can no longer rewind them.
void note_run(DeviceLayer& c, RowSpan run) {
  if (c.mark >= 0 && run.p0 + run.n - c.mark > DeviceLayer::kLogRows) c.mark_lost = true;
}

// Whether the indexer picks the rows a run sees (ratio 4, more indexed rows than it keeps), once
// the run's compressors have run.
bool run_selects(const AttentionLayer& l, const DeviceLayer& c) {
  return l.ratio == 4 && c.n_index > l.index_top_k;
}

}  // namespace

int CudaBackend::run_limit(const AttentionLayer& l, const DeviceLayer& c, int n_ctx) const {
  int64_t limit = c.ring_cap - c.lay.raw_cap + 1;  // the ring keeps every window of the run
  const int64_t per_row = int64_t{l.n_head} * (c.lay.raw_cap + max_compressed(l, n_ctx));
  limit = std::min(limit, kMaxScratchFloats / per_row);
  if (l.ratio == 4) limit = std::min<int64_t>(limit, kMaxScratchFloats / std::max(1, n_ctx / 4));
  return static_cast<int>(std::max<int64_t>(1, limit));
}

CudaBackend::Lane::~Lane() {
  if (!owned) return;
  if (done != nullptr) cudaEventDestroy(done);
  if (stream != nullptr) cudaStreamDestroy(stream);
}

void CudaBackend::Lane::open() {
  if (owned) return;
  DS4_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  DS4_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  owned = true;
}

void CudaBackend::do_attention(int il, const AttentionLayer& l, std::span<const RowTag> rows,
                               const AttentionInputs& in, Act out) {
  runs_.clear();
  int sequences = 0;
  int ahead = 0;  // rows of this run's sequence in the runs before it (they run first)
  size_t r = 0;
  while (r < rows.size()) {
    DeviceSequence& s = sequence(rows[r].seq);
    DS4_CHECK(il >= 0 && il < static_cast<int>(s.layers.size()));
    DeviceLayer& c = s.layers[il];
    const bool same = !runs_.empty() && runs_.back().seq == rows[r].seq;
    ahead = same ? ahead + runs_.back().span.n : 0;
    if (!same) ++sequences;  // a sequence's runs share its lane: (sequences - 1) % lanes
    const int limit = run_limit(l, c, s.layout.n_ctx);
    int n = 0;
    while (r + n < rows.size() && n < limit && rows[r + n].seq == rows[r].seq) {
      check_row_continues(il, c.lay.ratio, l.ratio, c.n_tokens + ahead + n, s.layout.n_ctx,
                          rows[r + n]);
      ++n;
    }
    runs_.push_back({&c, s.layout.n_ctx, RowSpan{rows[r].pos, n}, static_cast<int64_t>(r),
                     rows[r].seq, (sequences - 1) % kAttentionLanes});
    r += static_cast<size_t>(n);
  }
  // One sequence (decode of one session, a prefill chunk), or a step being recorded: the main
  // stream. Several sequences: each on a side lane (a sequence's runs stay in order on one
  // lane); the lanes start after the work queued so far and the main stream waits for them all.
  if (sequences == 1 || graph_.recording()) {
    for (const Run& run : runs_)
      attend_run(l, *run.c, run.span, run.n_ctx, in, run.r0, out, main_lane_);
    return;
  }
  const int used = std::min(sequences, kAttentionLanes);
  const bool one_row_each =
      static_cast<size_t>(sequences) == runs_.size() &&
      std::all_of(runs_.begin(), runs_.end(), [](const Run& run) { return run.span.n == 1; });
  if (one_row_each) return attend_sequences(l, in, out, used);
  fork_lanes(used);
  for (const Run& run : runs_)
    attend_run(l, *run.c, run.span, run.n_ctx, in, run.r0, out, side_lanes_[run.lane]);
  join_lanes(used);
}

void CudaBackend::fork_lanes(int used) {
  for (int i = 0; i < used; ++i) fork_to(side_lanes_[i]);
}

void CudaBackend::join_lanes(int used) {
  for (int i = 0; i < used; ++i) join_from(side_lanes_[i]);
}

void CudaBackend::fork_to(Lane& lane) {
  if (fork_ == nullptr) DS4_CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
  lane.open();
  DS4_CUDA_CHECK(cudaEventRecord(fork_, stream_));
  DS4_CUDA_CHECK(cudaStreamWaitEvent(lane.stream, fork_, 0));
  ++lanes_forked_;
}

void CudaBackend::join_from(Lane& lane) {
  DS4_CUDA_CHECK(cudaEventRecord(lane.done, lane.stream));
  DS4_CUDA_CHECK(cudaStreamWaitEvent(stream_, lane.done, 0));
  --lanes_forked_;
}

CudaBackend::OnLane::OnLane(CudaBackend& b, Lane& lane) : b_(b), lane_(lane) { trade(); }

CudaBackend::OnLane::~OnLane() { trade(); }

void CudaBackend::OnLane::trade() {
  std::swap(b_.stream_, lane_.stream);
  std::swap(b_.enc_, lane_.enc);
  std::swap(b_.split_, lane_.split);
}

// The rows of runs_ (one each, in batch order) in groups of kMaxSeqRows: the RoPE stores of a
// group in one launch on the main stream, every run's compressor lanes and indexer on the side
// lanes (they read neither the ring nor q), then the group's sink attention in one launch.
void CudaBackend::attend_sequences(const AttentionLayer& l, const AttentionInputs& in, Act out,
                                   int used) {
  const Numerics& num = numerics();
  const RopeArg rope = rope_arg(l.rope);
  const int n = static_cast<int>(runs_.size());
  const int ring_cap = runs_[0].c->ring_cap;
  for (const Run& run : runs_) DS4_CHECK(run.c->ring_cap == ring_cap);  // one layer's layout
  grow(seq_picks_, sizeof(int32_t) * static_cast<size_t>(n) * std::max(1, l.index_top_k));
  int32_t* picks = static_cast<int32_t*>(seq_picks_.get());
  std::vector<SeqRows> groups((n + kMaxSeqRows - 1) / kMaxSeqRows);
  for (int i = 0; i < n; ++i) {
    const Run& run = runs_[i];
    DS4_CHECK(run.r0 == i);  // one row per run: run i is batch row i
    SeqRows& g = groups[i / kMaxSeqRows];
    g.pos[g.n] = run.span.p0;
    g.ring[g.n] = run.c->raw.floats();
    g.comp[g.n] = run.c->comp.floats();
    g.visible[g.n] = nullptr;
    ++g.n;
  }
  for (size_t k = 0; k < groups.size(); ++k) {
    const int64_t r0 = int64_t{kMaxSeqRows} * static_cast<int64_t>(k);
    launch_rope_qkv_store_seqs(in.q.row(r0), in.q.cols, l.n_head, in.kv.row(r0), in.kv.cols, rope,
                               groups[k], num.qat_simulation, num.f16_rows, ring_cap, stream_);
  }
  // The compressor lanes of every sequence together, on the main stream; then the indexer's
  // picks of the runs that select, each on its side lane (no fork where none selects).
  if (l.ratio != 0) compress_sequences(l, in);
  bool selects = false;
  for (const Run& run : runs_) selects = selects || run_selects(l, *run.c);
  if (selects) fork_lanes(used);
  for (int i = 0; i < n; ++i) {
    const Run& run = runs_[i];
    Lane& where = selects ? side_lanes_[run.lane] : main_lane_;
    if (l.ratio == 0) note_run(*run.c, run.span);
    groups[i / kMaxSeqRows].visible[i % kMaxSeqRows] =
        select_run(l, *run.c, run.span, in, run.r0, where, picks + int64_t{i} * l.index_top_k);
  }
  if (selects) join_lanes(used);
  AttentionGeometry g;
  g.n_head = l.n_head;
  g.raw_cap = runs_[0].c->lay.raw_cap;
  g.ring_cap = ring_cap;
  g.ratio = l.ratio;
  g.top_k = l.index_top_k;
  g.f16_values = numerics().f16_rows;
  for (const Run& run : runs_) {
    const int p_end = run.span.p0 + 1;
    g.max_rows = std::max(g.max_rows, std::min(g.raw_cap, p_end) + max_compressed(l, p_end));
  }
  const int rows = std::min(n, kMaxSeqRows);
  float* sc = scratch(main_lane_.scores, attention_seqs_scratch_floats(l.n_head, g.max_rows, rows));
  for (size_t k = 0; k < groups.size(); ++k) {
    const int64_t r0 = int64_t{kMaxSeqRows} * static_cast<int64_t>(k);
    launch_attention_seqs(in.q.row(r0), in.q.cols, g, groups[k],
                          static_cast<const float*>(l.sinks.data), rope, sc,
                          floats_of(main_lane_.scores), out.row(r0), out.cols, stream_);
  }
}

void CudaBackend::attend_run(const AttentionLayer& l, DeviceLayer& c, RowSpan run, int n_ctx,
                             const AttentionInputs& in, int64_t r0, Act out, Lane& where) {
  // A one-row step sizes its scratch for the whole context at once, so that recorded steps
  // (graphs, begin_step) never need to grow it.
  const bool single = run.n == 1;
  const int32_t* visible = prepare_run(l, c, run, in, r0, where, true, nullptr);
  const int p_end = run.p0 + run.n;
  AttentionGeometry g;
  g.n_head = l.n_head;
  g.raw_cap = c.lay.raw_cap;
  g.ring_cap = c.ring_cap;
  g.ratio = l.ratio;
  g.top_k = l.index_top_k;
  g.f16_values = numerics().f16_rows;
  g.max_rows = std::min(c.lay.raw_cap, p_end) + max_compressed(l, p_end);
  const int64_t rows_reserved =
      single ? std::min(c.lay.raw_cap, n_ctx) + max_compressed(l, n_ctx) : g.max_rows;
  float* sc = scratch(where.scores,
                      attention_scratch_floats(l.n_head, static_cast<int>(rows_reserved), run.n));
  launch_attention(in.q.row(r0), in.q.cols, g, c.raw.floats(), c.comp.floats(), visible,
                   static_cast<const float*>(l.sinks.data), rope_arg(l.rope), run, sc,
                   floats_of(where.scores), out.row(r0), out.cols, where.stream);
}

const int32_t* CudaBackend::prepare_run(const AttentionLayer& l, DeviceLayer& c, RowSpan run,
                                        const AttentionInputs& in, int64_t r0, Lane& where,
                                        bool store, int32_t* picks) {
  if (store) {
    const Numerics& num = numerics();
    launch_rope_qkv_store(in.q.row(r0), in.q.cols, l.n_head, in.kv.row(r0), in.kv.cols,
                          rope_arg(l.rope), run, num.qat_simulation, num.f16_rows, c.raw.floats(),
                          c.ring_cap, where.stream);
  }
  compress_run(l, c, run, in, r0, where.stream);
  return select_run(l, c, run, in, r0, where, picks);
}

namespace {

// The attention compressor's lane of a run whose first row is batch row r0 (ratio != 0).
CompressorLane comp_lane(const AttentionLayer& l, DeviceLayer& c, RowSpan run,
                         const AttentionInputs& in, int64_t r0) {
  DS4_CHECK(c.n_comp == run.p0 / l.ratio && (run.p0 + run.n) / l.ratio <= c.lay.comp_cap);
  CompressorLane lane = lane_of(l.ratio, kHd, c.comp_kv, c.comp_score, in.comp_kv, in.comp_gate, r0,
                                l.comp_ape, l.comp_norm, false);
  mark_lane(c, c.comp_mark, &lane);
  return lane;
}

// The indexer's compressor lane of such a run (ratio 4).
CompressorLane index_lane(const AttentionLayer& l, DeviceLayer& c, RowSpan run,
                          const AttentionInputs& in, int64_t r0) {
  DS4_CHECK(c.n_index == run.p0 / 4);
  CompressorLane lane = lane_of(4, kIhd, c.index_kv, c.index_score, in.index_kv, in.index_gate, r0,
                                l.index_ape, l.index_norm, true);
  mark_lane(c, c.index_mark, &lane);
  return lane;
}

}  // namespace

void CudaBackend::compress_run(const AttentionLayer& l, DeviceLayer& c, RowSpan run,
                               const AttentionInputs& in, int64_t r0, cudaStream_t stream) {
  note_run(c, run);
  if (l.ratio == 0) return;
  const Numerics& num = numerics();
  const RopeArg rope = rope_arg(l.rope);
  c.n_comp += launch_compressor(comp_lane(l, c, run, in, r0), run, rope, num.qat_simulation,
                                num.f16_rows, c.comp.floats() + int64_t{c.n_comp} * kHd, stream);
  if (l.ratio != 4) return;
  c.n_index +=
      launch_compressor(index_lane(l, c, run, in, r0), run, rope, num.qat_simulation, num.f16_rows,
                        c.index.floats() + int64_t{c.n_index} * kIhd, stream);
  DS4_CHECK(c.n_index == c.n_comp);
}

void CudaBackend::compress_sequences(const AttentionLayer& l, const AttentionInputs& in) {
  DS4_CHECK(l.ratio != 0);
  const Numerics& num = numerics();
  const RopeArg rope = rope_arg(l.rope);
  const int n = static_cast<int>(runs_.size());
  CompressorSeqs comp, index;
  int emitted[kMaxSeqRows];
  for (int g0 = 0; g0 < n; g0 += kMaxSeqRows) {
    const int m = std::min(kMaxSeqRows, n - g0);
    comp.n = m;
    index.n = l.ratio == 4 ? m : 0;
    for (int k = 0; k < m; ++k) {
      const Run& run = runs_[g0 + k];
      DeviceLayer& c = *run.c;
      DS4_CHECK(run.span.n == 1);
      note_run(c, run.span);
      comp.lane[k] = comp_lane(l, c, run.span, in, run.r0);
      comp.pos[k] = run.span.p0;
      comp.dst[k] = c.comp.floats() + int64_t{c.n_comp} * kHd;
      if (index.n == 0) continue;
      index.lane[k] = index_lane(l, c, run.span, in, run.r0);
      index.pos[k] = run.span.p0;
      index.dst[k] = c.index.floats() + int64_t{c.n_index} * kIhd;
    }
    launch_compressor_seqs(comp, rope, num.qat_simulation, num.f16_rows, emitted, stream_);
    for (int k = 0; k < m; ++k) runs_[g0 + k].c->n_comp += emitted[k];
    if (index.n == 0) continue;
    launch_compressor_seqs(index, rope, num.qat_simulation, num.f16_rows, emitted, stream_);
    for (int k = 0; k < m; ++k) {
      DeviceLayer& c = *runs_[g0 + k].c;
      c.n_index += emitted[k];
      DS4_CHECK(c.n_index == c.n_comp);
    }
  }
}

const int32_t* CudaBackend::select_run(const AttentionLayer& l, DeviceLayer& c, RowSpan run,
                                       const AttentionInputs& in, int64_t r0, Lane& where,
                                       int32_t* picks) {
  const int32_t* visible = nullptr;
  if (run_selects(l, c)) {  // some row of the run selects
    cudaStream_t stream = where.stream;
    const bool single = run.n == 1;
    const Numerics& num = numerics();
    const RopeArg rope = rope_arg(l.rope);
    launch_indexer_query(in.index_q.row(r0), in.index_q.cols, l.n_index_head, rope, run,
                         num.qat_simulation, stream);
    const float wscale = 1.0f / std::sqrt(static_cast<float>(kIhd * l.n_index_head));
    float* scores =
        scratch(where.index_scores, single ? int64_t{c.lay.comp_cap} : int64_t{run.n} * c.n_index);
    if (picks == nullptr) {
      grow(where.visible, sizeof(int32_t) * static_cast<size_t>(run.n) * l.index_top_k);
      picks = static_cast<int32_t*>(where.visible.get());
    }
    // FP4-simulated rows of a batch: int8 codes for the tensor cores (launch_indexer_select).
    void* codes = nullptr;
    if (num.qat_simulation && run.n >= kIndexerBatchRows) {
      grow(where.index_codes, indexer_code_bytes(c.n_index, run.n, l.n_index_head));
      codes = where.index_codes.get();
    }
    launch_indexer_select(c.index.floats(), in.index_q.row(r0), in.index_q.cols, in.index_w.row(r0),
                          in.index_w.cols, wscale, l.n_index_head, l.index_top_k, run, c.n_index,
                          codes, scores, picks, stream);
    visible = picks;
  }
  c.n_tokens += run.n;
  return visible;
}

}  // namespace ds4::backend::cuda
