// include/ds4/engine.h: loading a DeepSeek V4 model and creating inference sessions.
// Owns: EngineOptions, the model facts apps need, Session creation, and the batched step that
// advances several sessions in one forward pass (continuous batching). An Engine owns the mapped
// model file, the backend and the bound weights; sessions borrow them, so an Engine must outlive
// its sessions. Neither Engine nor Session is thread-safe: drive them from one thread.
// Does not own: tokenization (ds4/tokenizer.h) or prompt rendering (ds4/chat.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ds4/observer.h"
#include "ds4/session.h"
#include "ds4/status.h"

namespace ds4 {

enum class BackendKind { kCpu, kCuda };

// The layers an engine computes (distributed inference, features.md §10.1): `first` to `last`
// inclusive (-1: the model's last layer), and whether the output head follows (only after the
// last layer). The default is the whole model. A slice starting after layer 0 takes the hidden
// state of the slice before it; one without the head hands its hidden state on
// (Session::append_slice).
struct LayerSlice {
  int first = 0;
  int last = -1;
  bool output = true;
};

// Parses "A:B" or "A:output" (features.md §10.2, the --layers flag): exactly one ':', A and B
// non-negative decimal layer numbers, B >= A; "output" for B means through the last layer and the
// head. The model's layer count is checked when an engine opens. Errors quote the text.
Result<LayerSlice> parse_layer_slice(std::string_view text);

// The layers after an engine's slice, computed elsewhere (distributed inference: the
// dist::Coordinator's route of slice workers). With one, the engine's sessions are whole again:
// append, sync and eval run the local slice a prefill chunk at a time, hand each chunk's hidden
// state to the tail (up to window() chunks in flight) and take the logits after the last.
class LayerTail {
 public:
  virtual ~LayerTail() = default;
  // A new session of the engine: its timeline at the tail takes the same context size and
  // prefill chunk (the state of every layer then has the same shape, and one snapshot holds all).
  virtual void attach(uint64_t /*session*/, const SessionOptions& /*options*/) {}
  // Starts appending `tokens` and their hidden state after the local slice (tokens x hidden_width
  // floats) to the timeline of `session` (an id unique within this engine); `reset` starts that
  // timeline at position 0; `want_logits`: the answer is the logits after the last token, else an
  // acknowledgement.
  virtual Status send(uint64_t session, std::span<const TokenId> tokens,
                      std::span<const float> hidden, bool reset, bool want_logits) = 0;
  // The answer to the session's oldest outstanding span: its logits (n_vocab floats) when it asked
  // for them, else nothing. After an error the session's other spans are void and its timeline
  // starts again with a reset.
  virtual Result<std::vector<float>> receive(uint64_t session) = 0;
  // Spans a session keeps in flight during a prefill (pipelining the tail's stages).
  virtual int window() const { return 1; }
  // Whether the tail still holds the first `n_tokens` of the session's timeline as sent; false
  // after a worker restarted or the route changed: the engine then evaluates the session again from
  // position 0 (a replay).
  virtual bool holds(uint64_t session, size_t n_tokens) const = 0;
  // The session is gone: the tail may free what it holds of it.
  virtual void release(uint64_t /*session*/) {}
  // Snapshots. The state of the tail's layers of the session (whose timeline holds `n_tokens`
  // tokens): one layer shard (Session::save_layers) per process, together covering every layer
  // after the local slice.
  virtual Result<std::vector<std::vector<uint8_t>>> export_layers(uint64_t /*session*/,
                                                                  size_t /*n_tokens*/) {
    return Status::unimplemented("this layer tail keeps no snapshots");
  }
  // Installs a snapshot's later layers: `shard_of(first, last)` makes the shard of each process's
  // inclusive layer range; the session's timeline becomes `tokens`.
  virtual Status import_layers(
      uint64_t /*session*/, std::span<const TokenId> /*tokens*/,
      const std::function<std::vector<uint8_t>(int first, int last)>& /*shard_of*/) {
    return Status::unimplemented("this layer tail keeps no snapshots");
  }
};

struct EngineOptions {
  std::string model_path = "ds4flash.gguf";
  // The MTP draft file (model.md §2.4; issue 51), validated like the model file and against its
  // shape; empty: none. Sessions then keep the block's window (every append, verification and
  // batched step runs its rows) and can draft (Session::draft, step_greedy).
  std::string mtp_path;
  // Only these layers' tensors are bound (the rest of the mapped file is never read). A slice
  // other than the whole model runs on the CPU backend only so far.
  LayerSlice layers;
  // The rest of the model, when `layers` ends before the head (shared: the caller may keep it to
  // watch its workers). Sessions then need no append_slice; Engine::step and snapshots refuse.
  std::shared_ptr<LayerTail> tail;
  BackendKind backend = BackendKind::kCpu;
  int threads = 0;  // CPU threads; 0 = one per hardware thread
  // The canonical semantics simulate the FP8 KV cache and the Hadamard+FP4 indexer rounding of
  // the official model, and store KV rows as f16 (semantics-diff.md §C.2). Turning these off
  // exists only to reproduce Hugging Face transformers' float32 function in tests.
  bool qat_simulation = true;
  bool f16_kv_rows = true;
  // The CUDA backend's prefill products (16 rows or more) of F16 / F32 weights on cuBLAS;
  // false puts them on its FP64 tensor-core kernel, which gives the CPU's results for those
  // products. It exists for the CUDA tests, which run their gates both ways.
  bool cuda_blas = true;
  bool profile_ops = false;  // record wall time per backend op (Engine::op_times)
  // Diagnostics: every call of the backend op named `repeat_op` ("rms_norm", "matmul", "hc_pre",
  // "hc_post", "moe" or "output_head"; empty: none) issues its work `repeat_times` times (1-16),
  // the same outputs recomputed, so a run with it, less a run without, times that op where it
  // runs (ds4-bench --repeat-op). Results do not change. "matmul:TYPE:ROWS" repeats only the
  // products of that weight type and output rows (e.g. "matmul:q8_0:4096").
  std::string repeat_op;
  int repeat_times = 2;
  // Directional steering (features.md §8): a file of n_layer x n_embd little-endian float32 (one
  // direction per layer, no header; its size must be exactly that), and the scales sessions use
  // unless they set their own (SessionOptions::steering). Empty file: none, and every scale must
  // be 0.
  std::string steering_file;
  Steering steering;
  // --power (features.md §10.11): the device's busy share in percent, 1-100 (100: full speed).
  // After each unit of work (a prefill chunk, a decode, batched or verification step, a drafting)
  // the engine sleeps so that busy / (busy + idle) = power / 100. Results do not change.
  int power = 100;
  // Sees what each forward pass computes (ds4/observer.h: the routed experts' inputs, the
  // sublayers' outputs); not owned, must outlive the engine. The CPU and CUDA backends report (on
  // CUDA each report copies to the host and steps run without graphs: slower, for tools).
  Observer* observer = nullptr;
};

// What --power accounted since open: the paced units' time and the sleeps after them.
struct PowerStats {
  double busy_seconds = 0.0;
  double idle_seconds = 0.0;
};

struct OpTime {
  std::string op;
  double seconds = 0.0;
  int64_t calls = 0;
};

struct ModelInfo {
  std::string shape;  // "flash", "pro", or a test shape name
  int n_layer = 0;
  int n_embd = 0;
  int n_vocab = 0;
  int n_ctx_max = 0;    // 1,048,576
  int expert_bits = 0;  // storage bits of the routed experts: 2 (q2), 4 (q4), 8, 16 or 32
  uint64_t file_bytes = 0;
  // 32 hex digits naming this model file's weights (its size, layout and bytes sampled from 16
  // tensors): what a saved agent session records to refuse loading into another model. A slice
  // file (ds4-gguf split) gives the whole file's, recorded when it was cut.
  std::string fingerprint;
  // The layers this engine computes (EngineOptions::layers resolved) and the width of the hidden
  // state one token carries between slices (n_hc * n_embd floats).
  int layer_first = 0;
  int layer_last = 0;
  bool layer_output = true;
  bool whole_model = true;
  int hidden_width = 0;
  bool mtp = false;       // an MTP draft file is loaded (EngineOptions::mtp_path)
  bool steering = false;  // a direction file is loaded (EngineOptions::steering_file)
};

// One entry of a batched step (Engine::step): a session of this engine and the tokens appended to
// it in this step -- one token for a decoding session, a prefill chunk for a new request.
struct StepEntry {
  Session* session = nullptr;
  std::span<const TokenId> tokens;  // borrowed for the call
  // A verification (speculative decoding in a batch, as Session::verify): `tokens` is run[0], the
  // token chosen from the session's logits, and its drafts; the session keeps run[0] and each
  // later token while *accept keeps it, the rest taken back exactly. Null: a plain append.
  const Session::DraftAccept* accept = nullptr;  // borrowed for the call
  Status status;  // out: ok, or why the entry was refused (session unchanged)
  int kept = 0;   // out: the tokens appended (all of them for a plain append; 0 when refused)
};

// One draw of Engine::pick.
struct PickEntry {
  const Session* session = nullptr;
  SamplingParams params;
  Rng* rng = nullptr;  // the request's generator, advanced as Session::sample advances it
  TokenId token = 0;   // out
};
// Runs task(0) .. task(n - 1), in any order, possibly at once (a caller's thread pool).
using ParallelFor = std::function<void(int64_t n, const std::function<void(int64_t)>& task)>;

class Engine {
 public:
  // Rows one step may hold in all (the largest prefill chunk a session may have).
  static constexpr int kMaxStepRows = 65536;

  // Opens and validates a model file (any shape ds4-gguf can produce). Errors: missing or
  // unreadable file, not a GGUF, wrong metadata or tensors (every problem listed), unknown backend.
  static Result<std::unique_ptr<Engine>> open(const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const ModelInfo& info() const;
  const EngineOptions& options() const;
  // KV state bytes of one session at `n_ctx` (model.md §5.2 formulas, float32 rows) and the
  // asymptotic bytes per context token.
  uint64_t session_bytes(int n_ctx) const;
  double bytes_per_token() const;
  // Memory still free where sessions are allocated (host RAM on the CPU backend, the GPU's on
  // CUDA); nullopt when the backend cannot tell (the CUDA backend does not report it yet). A
  // sizing hint for how many sessions to create; create_session is the real check.
  std::optional<uint64_t> free_memory_bytes() const;

  // --power at run time (EngineOptions::power; the agent's and REPL's /power), from any thread
  // (the next unit of work paces by it). Errors: outside 1-100 (unchanged).
  Status set_power(int percent);
  int power() const;
  PowerStats power_stats() const;

  // Time per backend op since open or the last reset (all zero unless profile_ops).
  std::vector<OpTime> op_times() const;
  void reset_op_times();

  // A new empty session. Errors: n_ctx outside [1, n_ctx_max], prefill_chunk < 1, memory.
  Result<std::unique_ptr<Session>> create_session(const SessionOptions& options);

  // Advances every entry's session by its tokens in ONE backend forward pass: the rows of all
  // entries (entry order, each entry's rows consecutive, tagged with its session's sequence and
  // absolute positions) form one batch. Afterwards each accepted session holds its new tokens and
  // the logits after its last one, exactly as if append(entry.tokens) had been called on it alone
  // (bit for bit on the CPU backend). An entry is refused -- entry.status says why, its session is
  // left unchanged, and the other entries still run -- when its session is null or of another
  // engine, when two entries name the same session (all of them are refused), when a token id is
  // outside the vocabulary, or when its tokens would not fit the session's context (at most
  // n_ctx - 1 tokens). An entry with no tokens is accepted and changes nothing. The step as a whole
  // fails, with every entry's status set to that error and nothing changed, only when the accepted
  // entries hold more than kMaxStepRows rows. Returns ok when the step ran (even if some entries
  // were refused). A step's row count may exceed the sessions' prefill_chunk: the caller's token
  // budget bounds it; the engine's activation buffers grow to the largest step seen. A
  // verification entry (StepEntry::accept) is also refused where Session::verify refuses (a
  // backend that cannot take rows back, no logits yet); what it keeps equals Session::verify of
  // its tokens alone (bit for bit on the CPU backend). A failed rewind resets that session and
  // sets its status.
  Status step(std::span<StepEntry> entries);

  // Each entry's next token drawn from its session's logits: on the CPU backend the token and
  // generator state of Session::sample, bit for bit. Where the backend picks tokens (CUDA), the
  // greedy and whole-vocabulary draws (top_k <= 0, top_p 1) of all entries run there in one launch
  // and only the tokens come back; such a draw equals the host's except where the uniform falls
  // within float rounding of the boundary between two tokens (the device sums the weights in
  // another order). Other draws run on the host, on `parallel_for` when given. Every entry's
  // session must be of this engine (a caller bug otherwise); a session without logits gives 0.
  void pick(std::span<PickEntry> entries, const ParallelFor& parallel_for = {});

  struct Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ds4
