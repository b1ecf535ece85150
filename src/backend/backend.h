// src/backend/backend.h: the seam between what DeepSeek V4 computes (model/) and how a device
// computes it (design/architecture.md §5.4).
// Owns: the coarse DS4 ops, each on a batch of token rows tagged with their sequence and absolute
// position, so several sessions can share one step; the validated public front of every op (shape
// and type checks happen here, once); the per-sequence state (raw window, compressed rows,
// compressor frontiers) and its host export/import for snapshots.
// Does not own: the layer schedule (model/forward), weight binding (model/weights), or the
// serialized snapshot format (kv/snapshot).
//
// Shapes are written outermost first. An Act is a row-major float32 matrix [rows][cols] in the
// backend's memory; row r of every Act passed to one op belongs to rows[r] of the batch.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ds4/observer.h"
#include "ds4/status.h"
#include "gguf/types.h"

namespace ds4::backend {

// A weight tensor where the backend computes (host memory for the CPU backend). ne is in GGUF
// order, row length first: a matrix [ne1][ne0], an expert stack [ne2][ne1][ne0].
struct Weight {
  const void* data = nullptr;
  gguf::GgufType type = gguf::GgufType::kF32;
  std::array<int64_t, 3> ne{0, 1, 1};
  uint8_t layout = 0;  // backend-private storage of `data`; 0 = GGUF blocks as stored
  bool present() const { return data != nullptr; }
};

// A float32 activation matrix [rows][cols], non-owning.
struct Act {
  float* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  float* row(int64_t r) const { return data + r * cols; }
};

// Owning activation storage; Backend::alloc hands these out (never per token).
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual float* data() = 0;
  virtual int64_t size() const = 0;  // floats
  Act view(int64_t rows, int64_t cols);
};

// Which sequence a row belongs to, its absolute position, and its input token id (hash routing).
struct RowTag {
  int32_t seq = 0;
  int32_t pos = 0;
  int32_t token = 0;
  // The directional steering scales of the row's session (features.md §8; 0: none), which
  // steer() applies to the attention and FFN outputs.
  float steer_attn = 0.0f;
  float steer_ffn = 0.0f;
  float steer_scale(Sublayer which) const {
    return which == Sublayer::kAttention ? steer_attn : steer_ffn;
  }
};

// Numerics switches (semantics-diff.md §C.3). Defaults are the canonical semantics; turning both
// off (and f16_rows) reproduces Hugging Face's float32 function.
struct Numerics {
  bool qat_simulation = true;  // FP8 KV rows + Hadamard/FP4 indexer (S1, S2)
  bool f16_rows = true;        // stored KV / compressed / indexer rows rounded through f16 (S7)
};

// Per-layer state dimensions of one sequence.
struct LayerLayout {
  int ratio = 0;           // 0 sliding, 4 CSA (+ indexer), 128 HCA
  int raw_cap = 0;         // raw window rows = min(window, ctx)
  int comp_cap = 0;        // compressed rows capacity: ctx / ratio + 2
  int frontier_rows = 0;   // R = (ratio == 4 ? 2 : 1) * ratio
  int frontier_width = 0;  // W = (ratio == 4 ? 2 : 1) * head_dim
};
struct SequenceLayout {
  int n_ctx = 0;
  int head_dim = 512;
  int indexer_head_dim = 128;
  std::vector<LayerLayout> layers;
  uint64_t bytes() const;  // float32 state bytes at full capacity
};

// One layer's live state in host memory, raw rows in logical order (oldest first). Frontier
// tensors are [R][W] row-major; unused frontier rows are normalised (kv 0, score -1e30) on export
// so equal logical states export equal bytes.
struct LayerState {
  int32_t n_tokens = 0;     // tokens the layer has consumed (the sequence length)
  std::vector<float> raw;   // n_raw x head_dim
  std::vector<float> comp;  // n_comp x head_dim
  std::vector<float> comp_kv, comp_score;
  std::vector<float> index;  // n_index x indexer_head_dim
  std::vector<float> index_kv, index_score;
};

// Floats where they lie in a byte buffer, not necessarily aligned (a session payload inside a
// file buffer starts anywhere): read with memcpy.
struct FloatBytes {
  const uint8_t* data = nullptr;
  size_t count = 0;  // floats
  size_t size() const { return count; }
  bool empty() const { return count == 0; }
};

// A LayerState where it lies in a payload (issue 55 item 4: import reads it in place, no copy).
struct LayerStateView {
  int32_t n_tokens = 0;
  FloatBytes raw, comp, comp_kv, comp_score, index, index_kv, index_score;
};

// The layer's parts copied out of the buffer, and a view of a LayerState's own parts.
LayerState to_state(const LayerStateView& v);
LayerStateView view_of(const LayerState& l);
std::vector<LayerStateView> views_of(const std::vector<LayerState>& state);
// A view's parts in payload order: raw, comp, comp_kv, comp_score, index, index_kv, index_score.
inline std::array<const FloatBytes*, 7> parts_of(const LayerStateView& v) {
  return {&v.raw, &v.comp, &v.comp_kv, &v.comp_score, &v.index, &v.index_kv, &v.index_score};
}

// A layer's parts' float counts in payload order: raw, comp, comp_kv, comp_score, index,
// index_kv, index_score (zero for the parts the layer's kind does not have).
using PartCounts = std::array<size_t, 7>;
PartCounts part_counts(const LayerLayout& l, int head_dim, int indexer_head_dim, int n_raw,
                       int n_comp, int n_index);
// The view of a layer whose parts lie back to back from *p, which moves past them.
LayerStateView take_layer_view(const uint8_t** p, int32_t n_tokens, const PartCounts& counts);

// Appends a layer's parts to a payload in the DSV4 payload's order (kv/snapshot.h, model.md
// §5.3): raw rows, compressed rows, compressor frontier kv and score, indexer rows, indexer
// frontier kv and score (empty parts add nothing). Every writer of layer state uses this order.
void append_layer_state(std::vector<uint8_t>* out, const LayerState& l);
// export_sequence_into's error for an `out` of `room` bytes where the layers hold `holds`.
Status layers_size_mismatch(size_t room, size_t holds);

// Whether `state` (one entry per layer) fits `layout`: row counts within capacity, whole rows,
// frontier tensors of the right size, nothing for the parts a layer kind does not have. Backends
// call it before touching a sequence, so a bad import changes nothing.
Status check_state_fits(const SequenceLayout& layout, const std::vector<LayerState>& state);
Status check_state_fits(const SequenceLayout& layout, std::span<const LayerStateView> state);

// A next-token pick on the backend (Engine::pick, issue 55): from one row of logits in backend
// memory, the argmax when temperature is not above 0, else the host sampler's whole-vocabulary
// draw (sampling.h: temperature and min_p; draws with top-k or top-p stay on the host) at
// `uniform`, which the host draws from the request's generator.
struct PickRow {
  Act logits;  // [1][n_vocab]
  float temperature = 0.0f;
  float min_p = 0.0f;  // as the sampler uses it (not below 0)
  float uniform = 0.0f;
};
struct Picked {
  int32_t token = 0;
  bool drew = false;  // whether the uniform was used (not for the argmax or with no finite logit)
};

struct HcWeights {
  Weight fn;     // [n_hc * n_embd] -> mix outputs
  Weight scale;  // [3] (HC pre) or [1] (output head)
  Weight base;   // [mix]
};

struct RopeParams {
  std::array<float, 32> inv_freq{};  // per pair of the 64-dim tail
};

struct AttentionLayer {
  int ratio = 0;
  int n_head = 0;
  int window = 0;
  int index_top_k = 0;
  int n_index_head = 0;
  RopeParams rope;
  Weight sinks;                  // [n_head]
  Weight comp_ape, comp_norm;    // ratio != 0: [ratio][W], [head_dim]
  Weight index_ape, index_norm;  // ratio == 4: [4][2 * 128], [128]
};

// Projections the attention op consumes (computed by matmul before it). Rows match the batch.
struct AttentionInputs {
  Act q;           // [rows][n_head * 512], per-head normalised, before RoPE
  Act kv;          // [rows][512], normalised, before RoPE
  Act comp_kv;     // ratio != 0: [rows][W]
  Act comp_gate;   // ratio != 0: [rows][W]
  Act index_kv;    // ratio == 4: [rows][256]
  Act index_gate;  // ratio == 4: [rows][256]
  Act index_q;     // ratio == 4: [rows][n_index_head * 128], before RoPE
  Act index_w;     // ratio == 4: [rows][n_index_head]
};

struct MoeLayer {
  int layer = -1;  // the model's layer index (for observers)
  int n_expert_used = 0;
  float weight_scale = 1.5f;
  Weight router;     // [n_expert][n_embd]
  Weight bias;       // [n_expert], absent on hash layers
  Weight tid2eid;    // [n_vocab][n_expert_used] I32, hash layers only
  Weight gate_exps;  // [n_expert][n_ff][n_embd]
  Weight up_exps;    // [n_expert][n_ff][n_embd]
  Weight down_exps;  // [n_expert][n_embd][n_ff]
  Weight gate_shexp, up_shexp, down_shexp;
};

struct OutputHead {
  HcWeights hc;
  Weight norm;
  Weight output;  // [n_vocab][n_embd]
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;

  // Makes a host tensor usable by the ops (the CPU backend uses it in place).
  virtual Result<Weight> upload(const Weight& host) = 0;
  virtual std::unique_ptr<Buffer> alloc(int64_t n_floats) = 0;

  // Sequence state. Ids are small integers chosen by the caller.
  virtual Status create_sequence(int seq, const SequenceLayout& layout) = 0;
  virtual void drop_sequence(int seq) = 0;
  virtual void reset_sequence(int seq) = 0;  // back to the empty state
  virtual Result<std::vector<LayerState>> export_sequence(int seq) const = 0;
  // Replaces the state; validates sizes against the layout first, so a failure changes nothing.
  virtual Status import_sequence(int seq, const std::vector<LayerState>& state) = 0;
  // The same two without a LayerState in between (a session's save and load, issue 55 item 4):
  // the layers written over `out` in payload order (append_layer_state's; `out` is exactly their
  // size, else an invalid_argument error and nothing written), `done` (may be empty) told each
  // time more of out's leading bytes are final (a count that only grows, last out.size()), so a
  // file writer may take them meanwhile; and the state read from where a payload holds it. These
  // defaults go through the two above; a backend that copies straight between its memory and the
  // payload overrides them.
  virtual Status export_sequence_into(int seq, std::span<uint8_t> out,
                                      const std::function<void(size_t)>& done) const;
  virtual Status import_sequence_view(int seq, std::span<const LayerStateView> state);
  // Speculation: from mark_sequence on, the backend keeps what each appended row changes, so that
  // rewind_sequence(seq, n) brings the sequence back exactly to its first n tokens (n at least its
  // count at the mark); settle_sequence keeps the state as it is and drops the record. A backend
  // without them says so (the caller then does not speculate).
  virtual Status mark_sequence(int /*seq*/) {
    return Status::unimplemented("this backend cannot take rows back");
  }
  virtual Status rewind_sequence(int /*seq*/, int /*n_tokens*/) {
    return Status::unimplemented("this backend cannot take rows back");
  }
  virtual void settle_sequence(int /*seq*/) {}
  // Bytes of the memory that sequences and step buffers come from (host RAM for the CPU, the
  // device's for a GPU) still free for new ones; nullopt when the backend cannot tell. A sizing
  // hint (the server's default pool), never a promise: create_sequence is the real check.
  virtual std::optional<uint64_t> free_memory_bytes() const { return std::nullopt; }
  // Whether pick_tokens runs here: a device backend keeps the logits where a pass leaves them and
  // sends back only the picked tokens; the engine draws on the host otherwise.
  virtual bool picks_tokens() const { return false; }
  // out[i] for rows[i], all in one go (a caller bug where picks_tokens() is false).
  virtual void pick_tokens(std::span<const PickRow> rows, std::span<Picked> out);
  // An observer of what the ops compute (ds4/observer.h; not owned, null: none). A backend that
  // cannot report says so.
  virtual Status set_observer(Observer* /*observer*/) {
    return Status::unimplemented("this backend does not report to observers (use the CPU backend)");
  }

  // ---- ops (validated front; see the do_* contracts below) ----
  // out[r] = n_hc copies of the embedding row of rows[r].token.
  void embed(const Weight& table, std::span<const RowTag> rows, Act out);
  // y[r] = RMSNorm over each `segment`-wide slice of x[r] (weight optional, length segment).
  void rms_norm(Act x, const Weight* weight, int64_t segment, Act y);
  // y[r] = W . x[r]; with groups > 1, x[r] is `groups` slices and W's rows split evenly among them.
  void matmul(const Weight& w, Act x, Act y, int groups = 1);
  // y = W . x[r] for each product (one output group each) of the same input, what matmul computes
  // for each, in one call: a backend may run them together (the CUDA backend encodes x once and,
  // for one row, launches them as one kernel).
  struct Product {
    const Weight* w = nullptr;
    Act y;
  };
  void matmuls(Act x, std::span<const Product> products);
  // HC pre: cur[r] = sum_h pre[h] X[r][h]; mix[r] = [pre(n_hc), post(n_hc), comb(n_hc^2)].
  // With `norm` (F32, cur.cols values), also normed[r] = rms_norm(cur[r]) * norm, exactly as
  // rms_norm(cur, norm, cur.cols, normed) after it (a backend may fuse the two).
  void hc_pre(const HcWeights& hc, Act x, Act cur, Act mix, const Weight* norm = nullptr,
              Act normed = {});
  // HC post: y[r][b] = f[r] post[b] + sum_a comb[a][b] x[r][a].
  void hc_post(Act x, Act f, Act mix, Act y);
  // y = a + b, element by element (the MTP block's input, model.md §8.1); y may be a or b.
  void add(Act a, Act b, Act y);
  // dst = src (the same shape; not overlapping): rows kept from one pass for a later one.
  void copy(Act src, Act dst);
  // RoPE, low-precision simulation, cache append, compressors, indexer and sink attention for
  // layer `il`, row by row in batch order; out[r] = head outputs after inverse RoPE.
  void attention(int il, const AttentionLayer& layer, std::span<const RowTag> rows,
                 const AttentionInputs& in, Act out);
  // Router, routed experts and the shared expert: out[r] = moe(n[r]) + shared(n[r]).
  void moe(const MoeLayer& layer, std::span<const RowTag> rows, Act n, Act out);
  // HC head + final norm + vocabulary projection for the rows listed in `which`.
  void output_head(const OutputHead& head, Act x, std::span<const int> which, Act logits);
  // Directional steering (features.md §8.2): y[r] -= s * direction * (direction . y[r]), s the
  // row's scale for `which` (RowTag::steer_scale); direction is F32 [y.cols]. A row whose scale is
  // 0 is left as it is.
  void steer(const Weight& direction, std::span<const RowTag> rows, Sublayer which, Act y);
  // A sublayer's output (rows x n_embd) for the observer (set_observer), if one is set and the
  // backend reports; otherwise nothing.
  void report_sublayer(int layer, Sublayer which, std::span<const RowTag> rows, Act y);
  // Copies an activation matrix to host memory (rows * cols floats); waits for pending work.
  void download(Act src, float* host);
  // Copies rows * cols host floats into an activation matrix (a layer slice's input hidden state,
  // engine.h LayerSlice). Called outside begin_step / end_step.
  void upload_act(const float* host, Act dst);
  // Returns once the work issued so far is done (--power measures the device's time with it).
  virtual void wait_idle() {}
  // Forward::run brackets each pass over a batch with these: a backend may record the ops in
  // between and submit them as one unit (the CUDA backend's graphs for decode steps). No op in
  // between may wait for the device; download comes after end_step. Defaults do nothing.
  virtual void begin_step(std::span<const RowTag> rows) { (void)rows; }
  virtual void end_step() {}

  // Virtual so that a backend wrapping another (diagnostic_backend.h) passes it on.
  virtual void set_numerics(const Numerics& n) { numerics_ = n; }
  const Numerics& numerics() const { return numerics_; }

 protected:
  virtual void do_embed(const Weight& table, std::span<const RowTag> rows, Act out) = 0;
  virtual void do_rms_norm(Act x, const Weight* weight, int64_t segment, Act y) = 0;
  virtual void do_matmul(const Weight& w, Act x, Act y, int groups) = 0;
  // Default: do_matmul for each product in order.
  virtual void do_matmuls(Act x, std::span<const Product> products);
  virtual void do_hc_pre(const HcWeights& hc, Act x, Act cur, Act mix, const Weight* norm,
                         Act normed) = 0;
  virtual void do_hc_post(Act x, Act f, Act mix, Act y) = 0;
  virtual void do_add(Act a, Act b, Act y) = 0;
  virtual void do_copy(Act src, Act dst) = 0;
  virtual void do_attention(int il, const AttentionLayer& layer, std::span<const RowTag> rows,
                            const AttentionInputs& in, Act out) = 0;
  virtual void do_moe(const MoeLayer& layer, std::span<const RowTag> rows, Act n, Act out) = 0;
  virtual void do_output_head(const OutputHead& head, Act x, std::span<const int> which,
                              Act logits) = 0;
  virtual void do_steer(const Weight& direction, std::span<const RowTag> rows, Sublayer which,
                        Act y) = 0;
  // Default: nothing (a backend without observers).
  virtual void do_report_sublayer(int /*layer*/, Sublayer /*which*/,
                                  std::span<const RowTag> /*rows*/, Act /*y*/) {}
  virtual void do_download(Act src, float* host) = 0;
  virtual void do_upload_act(const float* host, Act dst) = 0;
  // A sublayer starts (hc_pre calls it once, before its work): the CUDA backend's graphs may
  // cut a segment here. Default: nothing.
  virtual void sublayer_start() {}

 private:
  // The one backend that wraps another (op timing and repeats, outside this front) calls the
  // wrapped backend's do_* directly: its own front has checked the call.
  friend class DiagnosticBackend;
  Numerics numerics_;
};

// Hands a sublayer's output, in host memory (`values`: rows x n_embd), to `observer` with the
// rows' positions: what do_report_sublayer of a backend that reports does.
void report_sublayer_to(Observer& observer, int layer, Sublayer which, std::span<const RowTag> rows,
                        std::span<const float> values, int64_t n_embd);

enum class BackendKind { kCpu, kCuda };
// What a backend is built with (factory.h). Each field is read by the backends it names.
struct BackendOptions {
  int threads = 0;  // CPU worker threads; 0 = one per hardware thread
  // CUDA: prefill products (16 rows or more) of F16 / F32 weights on cuBLAS; false puts them on
  // the FP64 tensor-core kernel, with the CPU's results for those products (cuda/blas_products.h).
  // Tests run the CUDA gates both ways.
  bool cuda_blas = true;
};

}  // namespace ds4::backend
