// src/backend/cuda/cuda_backend.h: the CUDA backend (host code only; kernels in kernels/).
// Owns: the device copies of the weights (uploaded once), activation buffers, per-sequence state
// in device memory, the stream, device scratch that grows but is never freed per token, and the
// decode steps' CUDA graphs (step_graph.h). The cache-dependent attention steps run over runs
// of consecutive rows with the CPU reference's results; products use the planar kernels (the
// tensor-core one for many slots) or the device twins of the CPU dot kernels
// (kernels/matmul_planar.cuh, kernels/matmul_imma.cuh, kernels/matmul_q.cuh).
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <map>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/blas_products.h"
#include "backend/cuda/kernels/attention.cuh"
#include "backend/cuda/kernels/matmul_planar.cuh"
#include "backend/cuda/step_graph.h"

namespace ds4::backend::cuda {

// One device allocation (RAII).
class DeviceMemory {
 public:
  DeviceMemory() = default;
  explicit DeviceMemory(size_t bytes);
  ~DeviceMemory();
  DeviceMemory(DeviceMemory&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
  DeviceMemory& operator=(DeviceMemory&& o) noexcept;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  void* get() const { return p_; }
  float* floats() const { return static_cast<float*>(p_); }
  size_t bytes() const { return n_; }
  // Replaces the allocation; false (and empty) when the device is out of memory.
  bool try_allocate(size_t bytes);
  // Grows to at least `bytes` (contents are not kept).
  void reserve(size_t bytes);

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
};

// Page-locked host ints (RAII): the source of a copy recorded into a graph, read when it runs.
class PinnedInts {
 public:
  PinnedInts() = default;
  ~PinnedInts();
  PinnedInts(const PinnedInts&) = delete;
  PinnedInts& operator=(const PinnedInts&) = delete;
  int32_t* data() const { return p_; }
  size_t size() const { return n_; }
  void reserve(size_t n);  // grows to at least n ints (contents are not kept)

 private:
  int32_t* p_ = nullptr;
  size_t n_ = 0;
};

// A layer's state on the device. The raw window is a ring of ring_cap rows (position p in slot
// p % ring_cap), larger than the window so a batch of rows can be stored before any attends.
struct DeviceLayer {
  LayerLayout lay;
  int ring_cap = 0;
  DeviceMemory raw, comp, comp_kv, comp_score, index, index_kv, index_score;
  int n_comp = 0, n_index = 0, n_tokens = 0;
  // Speculation (Backend::mark_sequence): the position of the mark (-1: not marked), whether more
  // rows than a lane log holds were stored since, and per compressor lane the frontier rows saved
  // at the mark and the log of the positions since (CompressorLane::mark). Raw rows need nothing:
  // the ring holds kMaxRunRows - 1 rows beyond the window, so a verification's rows overwrite
  // none the window still reads after a rewind; compressed rows past the restored counts are
  // unreachable until written again.
  struct LaneMark {
    DeviceMemory save_kv, save_score, log_kv, log_score;
  };
  static constexpr int kLogRows = 32;  // rows a verification may store after the mark
  LaneMark comp_mark, index_mark;
  int mark = -1;
  bool mark_lost = false;
};

// Fills the speculation fields of `lane` (CompressorLane::mark), one of c's lanes kept in `m`,
// while c is marked and its log still holds every row since the mark; leaves them off otherwise.
void mark_lane(const DeviceLayer& c, const DeviceLayer::LaneMark& m, CompressorLane* lane);

struct DeviceSequence {
  SequenceLayout layout;
  std::vector<DeviceLayer> layers;
};

class CudaBackend final : public Backend {
 public:
  struct Options {
    bool graphs = true;        // submit decode steps (one row) as CUDA graphs (StepGraph)
    bool graph_stats = false;  // report the graphs' use on stderr when destroyed
    int graph_segment = 4;     // sublayers per graph segment (0: a step is one graph)
    int profile_steps = 0;     // > 0: the CUDA profiler range covers this many decode steps
    int profile_at = -1;       // >= 0: the range covers the first batch step from this position
    int profile_rows = 0;      // > 0: profile_steps counts steps of this many rows of one sequence
    // Products of F16 / F32 weights with at least BlasProducts::kMinRows rows go to cuBLAS
    // (blas_products.h); off (BackendOptions::cuda_blas), to the FP64 tensor-core kernel.
    bool blas = true;
  };
  explicit CudaBackend(const Options& options);
  ~CudaBackend() override;
  std::string_view name() const override { return "cuda"; }
  // The device memory still free (cudaMemGetInfo), for the server's default session pool.
  std::optional<uint64_t> free_memory_bytes() const override;
  // Picks on the device (kernels/pick.cuh): one launch for all rows, only the tokens come back.
  // DS4_CUDA_PICKS=0 leaves them to the host (the A/B of issue 55's device picks).
  bool picks_tokens() const override { return picks_; }
  void pick_tokens(std::span<const PickRow> rows, std::span<Picked> out) override;
  Result<Weight> upload(const Weight& host) override;
  std::unique_ptr<Buffer> alloc(int64_t n_floats) override;

  Status create_sequence(int seq, const SequenceLayout& layout) override;
  void drop_sequence(int seq) override;
  void reset_sequence(int seq) override;
  // The state's copies (session_io.cpp): straight between the device and the payload.
  Result<std::vector<LayerState>> export_sequence(int seq) const override;
  Status import_sequence(int seq, const std::vector<LayerState>& state) override;
  Status export_sequence_into(int seq, std::span<uint8_t> out,
                              const std::function<void(size_t)>& done) const override;
  Status import_sequence_view(int seq, std::span<const LayerStateView> state) override;
  // Marking costs no device work: the verification's compressor launches log what a rewind
  // needs (CompressorLane::mark); a rewind launches one kernel per compressor lane.
  Status mark_sequence(int seq) override;
  Status rewind_sequence(int seq, int n_tokens) override;
  void settle_sequence(int seq) override;
  // A step of one row, after a step of one row ran eagerly (it sized every scratch buffer: the
  // attention scratch of a one-row step is sized for the whole context), is recorded and
  // submitted as a graph; any other step runs eagerly.
  void begin_step(std::span<const RowTag> rows) override;
  void end_step() override;
  void wait_idle() override;
  // Observers (ds4/observer.h): what they are shown is copied to the host when it is computed,
  // so steps run eagerly (no graphs) while one is set.
  Status set_observer(Observer* observer) override {
    observer_ = observer;
    return Status::ok();
  }
  const StepGraph::Counts& graph_counts() const { return graph_.counts(); }

 protected:
  void do_embed(const Weight& table, std::span<const RowTag> rows, Act out) override;
  void do_rms_norm(Act x, const Weight* weight, int64_t segment, Act y) override;
  void do_matmul(const Weight& w, Act x, Act y, int groups) override;
  void do_matmuls(Act x, std::span<const Product> products) override;
  void do_hc_pre(const HcWeights& hc, Act x, Act cur, Act mix, const Weight* norm,
                 Act normed) override;
  void do_hc_post(Act x, Act f, Act mix, Act y) override;
  void do_add(Act a, Act b, Act y) override;
  void do_steer(const Weight& direction, std::span<const RowTag> rows, Sublayer which,
                Act y) override;
  void do_copy(Act src, Act dst) override;
  void do_attention(int il, const AttentionLayer& layer, std::span<const RowTag> rows,
                    const AttentionInputs& in, Act out) override;
  void do_moe(const MoeLayer& layer, std::span<const RowTag> rows, Act n, Act out) override;
  void do_output_head(const OutputHead& head, Act x, std::span<const int> which,
                      Act logits) override;
  void do_report_sublayer(int layer, Sublayer which, std::span<const RowTag> rows, Act y) override;
  void do_download(Act src, float* host) override;
  void do_upload_act(const float* host, Act dst) override;
  void sublayer_start() override;

 private:
  DeviceSequence& sequence(int seq);
  // Encodes x for w's dot product into enc_ and multiplies (experts/rows: device arrays or null).
  void matmul_slots(const Weight& w, const float* x, int64_t x_rows, int64_t x_cols,
                    const int32_t* experts, const int32_t* rows, int64_t n_slots, int groups,
                    float* y, const SlotGroups* by_expert = nullptr);
  // matmul_slots in two halves, so products over the same activations can share one encoding:
  // x encoded for w's dot into enc_ (valid until the next encoding), or x itself for F16 / F32
  // weights, whose dots read floats; then the product over activations so encoded.
  const void* encode_for(const Weight& w, const float* x, int64_t x_rows, int64_t x_cols);
  void matmul_encoded(const Weight& w, const void* enc, int64_t x_cols, const int32_t* experts,
                      const int32_t* rows, int64_t n_slots, int groups, float* y,
                      const SlotGroups* by_expert = nullptr);
  // The down projection's input: the SwiGLU of gate and up (times the routing weights when
  // given) encoded for `down` (a block type), or formed in place into gate
  // and returned as floats for the float weights.
  const void* encode_swiglu_for(const Weight& down, float* gate, const float* up,
                                const float* weights, int64_t rows, int64_t cols);
  // The gate and up products of an FFN over the same activations (one encoding when the two
  // weight types match).
  void matmul_gate_up(const Weight& gate, const Weight& up, const float* x, int64_t x_rows,
                      int64_t x_cols, const int32_t* experts, const int32_t* rows, int64_t n_slots,
                      float* y_gate, float* y_up, const SlotGroups* by_expert = nullptr);
  // Rows of one sequence a single attention run may hold for this layer.
  int run_limit(const AttentionLayer& l, const DeviceLayer& c, int n_ctx) const;
  // A stream for work that overlaps the main stream's, with its scratch. Attention runs: the main
  // lane is stream_; a step of several sequences spreads them over side lanes, whose kernels
  // overlap (one sequence's attention kernels fill a fraction of the GPU). Products: the FFN's
  // shared expert runs on ffn_lane_ beside the routed experts, with encodings and split sums of
  // its own (OnLane).
  struct Lane {
    Lane() = default;
    Lane(const Lane&) = delete;
    Lane& operator=(const Lane&) = delete;
    ~Lane();
    void open();  // a stream and an event of its own
    cudaStream_t stream = nullptr;
    cudaEvent_t done = nullptr;
    bool owned = false;
    DeviceMemory scores, index_scores, index_codes, visible;  // attention runs
    DeviceMemory enc, split;                                  // products (OnLane)
  };
  // While one lives, the backend's products go to `lane`: stream_, enc_ and split_ trade places
  // with the lane's stream and scratch, and trade back at its end.
  class OnLane {
   public:
    OnLane(CudaBackend& b, Lane& lane);
    ~OnLane();
    OnLane(const OnLane&) = delete;
    OnLane& operator=(const OnLane&) = delete;

   private:
    void trade();
    CudaBackend& b_;
    Lane& lane_;
  };
  static constexpr int kAttentionLanes = 8;
  // The attention steps for run.n consecutive rows (batch rows r0 ..) at positions run.p0 ..,
  // queued on lane.stream.
  void attend_run(const AttentionLayer& l, DeviceLayer& c, RowSpan run, int n_ctx,
                  const AttentionInputs& in, int64_t r0, Act out, Lane& where);
  // What precedes the sink attention for a run, on lane.stream: the RoPE + raw store (when
  // `store`), the compressor lanes and the indexer's picks (into `picks`, run.n * top_k ints, or
  // the lane's buffer when null). Returns the picks, or nullptr where no row of the run selects.
  const int32_t* prepare_run(const AttentionLayer& l, DeviceLayer& c, RowSpan run,
                             const AttentionInputs& in, int64_t r0, Lane& where, bool store,
                             int32_t* picks);
  // prepare_run's compressor lanes (the attention's, and the indexer's at ratio 4), on stream;
  // the rows they emit counted in c.
  void compress_run(const AttentionLayer& l, DeviceLayer& c, RowSpan run, const AttentionInputs& in,
                    int64_t r0, cudaStream_t stream);
  // The same for every run of runs_ (one row each, l.ratio != 0): each lane of all sequences in
  // one set of launches (launch_compressor_seqs, up to kMaxSeqRows sequences a set) on the main
  // stream.
  void compress_sequences(const AttentionLayer& l, const AttentionInputs& in);
  // prepare_run's indexer picks (when some row of the run selects) on where.stream, then the
  // run's rows counted in c.
  const int32_t* select_run(const AttentionLayer& l, DeviceLayer& c, RowSpan run,
                            const AttentionInputs& in, int64_t r0, Lane& where, int32_t* picks);
  // A step of one row in each of several sequences (runs_ one row each): the RoPE stores and the
  // sink attention of all its rows in one launch each (kernels/attention.cuh, SeqRows) instead
  // of one per sequence on the side lanes (faster on the H200).
  void attend_sequences(const AttentionLayer& l, const AttentionInputs& in, Act out, int used);
  // `lane` (opened here) starts after the work queued on the main stream so far (fork_to); the
  // main stream waits for what it was given since (join_from). In between, a recorded step may
  // not be cut short (grow checks it), which holds because a step's scratch sizes are those of
  // the eager step before its recording. fork_lanes / join_lanes: side lanes 0 .. used - 1.
  void fork_to(Lane& lane);
  void join_from(Lane& lane);
  void fork_lanes(int used);
  void join_lanes(int used);
  // The batch's token ids on the device (uploaded when they differ from the last batch's).
  const int32_t* device_tokens(std::span<const RowTag> rows);
  // F16 / F32 weights: their products read the float activations as they are (no encoding) and
  // may go to cuBLAS.
  static bool float_weight(const Weight& w) {
    return w.type == gguf::GgufType::kF16 || w.type == gguf::GgufType::kF32;
  }
  // Grows m to at least `bytes` (a recording step is cut short first: allocations wait for the
  // device); scratch() does it for n floats and returns the buffer.
  void grow(DeviceMemory& m, size_t bytes);
  // Ends a recording step early: what was recorded runs now and the rest of the step eagerly.
  // Not with a lane forked (fork_to): the capture would end with a branch unjoined.
  void cut_recording();
  float* scratch(DeviceMemory& m, int64_t n_floats);
  // n zeroed ticket counters (kernels that elect a last CTA leave them zero again).
  unsigned* tickets(int64_t n);

  cudaStream_t stream_ = nullptr;
  std::vector<DeviceMemory> weights_;
  std::map<int, std::unique_ptr<DeviceSequence>> seqs_;
  DeviceMemory staging_;  // upload staging for tensors that are repacked on the device
  bool picks_ = true;
  DeviceMemory pick_args_, pick_out_;  // pick_tokens' rows and results on the device
  DeviceMemory row_tokens_;
  std::vector<int32_t> row_tokens_host_;
  PinnedInts row_tokens_pinned_;  // a recorded step's token ids
  DeviceMemory row_scales_;       // a batched step's steering scales per row (do_steer)
  std::vector<float> row_scales_host_;
  Observer* observer_ = nullptr;  // not owned (EngineOptions::observer)
  // A MoE op's routing and SwiGLU outputs for the observer (do_moe), copied to the host.
  void report_expert_inputs(const MoeLayer& l, Act n, const int32_t* d_sel, const float* d_weights,
                            const float* gate, const float* up, int64_t slots, int64_t n_ff);
  Options options_;
  int profiled_steps_ = 0;
  int profile_at_state_ = 0;  // profile_at: 0 waiting, 1 range open, 2 done
  int last_step_rows_ = 0;    // rows of the last step (0: none since the sequences changed)
  int last_step_seq_ = -1;
  StepGraph graph_{options_.graph_segment};
  std::unique_ptr<BlasProducts> blas_;  // null when options_.blas is off
  DeviceMemory blas_scratch_;
  DeviceMemory enc_, tmp_a_, tmp_b_, tmp_c_, tmp_d_, tmp_e_, tmp_f_, tmp_obs_, ints_, groups_,
      tickets_, split_;
  Lane main_lane_;                                // stream_, not owned
  std::array<Lane, kAttentionLanes> side_lanes_;  // opened at the first step that fans out
  Lane ffn_lane_;                                 // the FFN's shared expert's (moe.cpp)
  cudaEvent_t fork_ = nullptr;
  int lanes_forked_ = 0;  // lanes fork_to started that join_from has not joined
  struct Run {            // an attention run of do_attention's batch
    DeviceLayer* c;
    int n_ctx;
    RowSpan span;
    int64_t r0;
    int seq;
    int lane;  // the side lane its sequence takes when the step fans out
  };
  std::vector<Run> runs_;
  DeviceMemory seq_picks_;  // attend_sequences: each run's indexer picks
};

Backend* make_cuda_backend(const BackendOptions& options);

}  // namespace ds4::backend::cuda
