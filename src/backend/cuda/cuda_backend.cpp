// src/backend/cuda/cuda_backend.cpp: device memory, sequence state and the dense ops.
#include "backend/cuda/cuda_backend.h"

#include <cuda_profiler_api.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/cuda/check.h"
#include "backend/cuda/env_switch.h"
#include "backend/cuda/kernels/dense.cuh"
#include "backend/cuda/kernels/matmul_planar.cuh"
#include "backend/cuda/kernels/matmul_q.cuh"
#include "backend/cuda/kernels/pick.cuh"
#include "backend/frontier.h"

namespace ds4::backend::cuda {
namespace {

constexpr int kMaxRunRows = 512;    // rows one attention run may store before the first attends
constexpr int kSinkhornIters = 20;  // HC mix iterations (model.md §4.3)

class DeviceBuffer final : public Buffer {
 public:
  explicit DeviceBuffer(int64_t n) : mem_(sizeof(float) * static_cast<size_t>(n)), n_(n) {}
  float* data() override { return mem_.floats(); }
  int64_t size() const override { return n_; }

 private:
  DeviceMemory mem_;
  int64_t n_;
};

void upload_floats(const DeviceMemory& dst, const std::vector<float>& src) {
  if (!src.empty()) {
    DS4_CUDA_CHECK(
        cudaMemcpy(dst.get(), src.data(), src.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
}

void empty_frontier(const DeviceMemory& kv, const DeviceMemory& score, int rows, int width) {
  std::vector<float> k(size_t(rows) * width), s(k.size());
  reset_frontier_rows(k, s, 0, rows, width);
  upload_floats(kv, k);
  upload_floats(score, s);
}

void reset_layer(DeviceLayer& c) {
  c.n_comp = c.n_index = c.n_tokens = 0;
  c.mark = -1;
  if (c.lay.ratio != 0) {
    empty_frontier(c.comp_kv, c.comp_score, c.lay.frontier_rows, c.lay.frontier_width);
  }
  if (c.lay.ratio == 4) empty_frontier(c.index_kv, c.index_score, 8, 256);
}

}  // namespace

DeviceMemory::DeviceMemory(size_t bytes) : n_(bytes) {
  if (bytes != 0) DS4_CUDA_CHECK(cudaMalloc(&p_, bytes));
}

DeviceMemory::~DeviceMemory() {
  if (p_ != nullptr) cudaFree(p_);
}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& o) noexcept {
  if (this != &o) {
    if (p_ != nullptr) cudaFree(p_);
    p_ = o.p_;
    n_ = o.n_;
    o.p_ = nullptr;
    o.n_ = 0;
  }
  return *this;
}

bool DeviceMemory::try_allocate(size_t bytes) {
  *this = DeviceMemory();
  if (bytes == 0) return true;
  if (cudaMalloc(&p_, bytes) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error of a failed allocation
    p_ = nullptr;
    return false;
  }
  n_ = bytes;
  return true;
}

void DeviceMemory::reserve(size_t bytes) {
  if (bytes <= n_) return;
  // Work queued earlier may still read the old allocation (ops do not wait for the device):
  // let it finish before the memory goes back.
  if (p_ != nullptr) DS4_CUDA_CHECK(cudaDeviceSynchronize());
  *this = DeviceMemory(bytes + bytes / 4);
}

PinnedInts::~PinnedInts() {
  if (p_ != nullptr) cudaFreeHost(p_);
}

void PinnedInts::reserve(size_t n) {
  if (n <= n_) return;
  if (p_ != nullptr) DS4_CUDA_CHECK(cudaFreeHost(p_));
  p_ = nullptr;
  n_ = 0;
  DS4_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&p_), n * sizeof(int32_t)));
  n_ = n;
}

CudaBackend::CudaBackend(const Options& options) : options_(options) {
  DS4_CUDA_CHECK(cudaStreamCreate(&stream_));
  picks_ = env_switch("DS4_CUDA_PICKS", true);
  main_lane_.stream = stream_;
  if (options_.blas) blas_ = std::make_unique<BlasProducts>();
}

void CudaBackend::begin_step(std::span<const RowTag> rows) {
  const int n = static_cast<int>(rows.size());
  const int seq = n > 0 ? rows[0].seq : -1;
  const bool warm = n == last_step_rows_ && seq == last_step_seq_;
  last_step_rows_ = n;
  last_step_seq_ = seq;
  // A profiler range (ncu/nsys with the range filter) over the first decode steps: steps of
  // one row per sequence (one session decoding, or several batched by the server).
  bool decode = n > 0;
  for (int i = 1; i < n && decode; ++i) decode = rows[i].seq != rows[i - 1].seq;
  // With profile_rows, steps of that many rows of one sequence instead (a verification).
  if (options_.profile_rows > 0) {
    decode = n == options_.profile_rows;
    for (int i = 1; i < n && decode; ++i) decode = rows[i].seq == rows[0].seq;
  }
  if (decode && profiled_steps_ < options_.profile_steps && profiled_steps_++ == 0)
    DS4_CUDA_CHECK(cudaProfilerStart());
  // Or over one prefill chunk: the first step of several rows from position profile_at.
  if (options_.profile_at >= 0 && profile_at_state_ == 0 && n > 1 &&
      rows[0].pos >= options_.profile_at) {
    DS4_CUDA_CHECK(cudaProfilerStart());
    profile_at_state_ = 1;
  }
  if (!options_.graphs || observer_ != nullptr || n != 1 || !warm) return;
  // The recorded copy of the token ids reads row_tokens_pinned_ when the graph runs: the last
  // step (which may still be running) must be done with it before it is rewritten.
  DS4_CUDA_CHECK(cudaStreamSynchronize(stream_));
  row_tokens_pinned_.reserve(rows.size());
  graph_.begin(stream_);
}

void CudaBackend::end_step() {
  if (graph_.recording()) graph_.end_and_launch(stream_);
  if (profiled_steps_ == options_.profile_steps && profiled_steps_ > 0) {
    DS4_CUDA_CHECK(cudaStreamSynchronize(stream_));
    DS4_CUDA_CHECK(cudaProfilerStop());
    ++profiled_steps_;  // once
  }
  if (profile_at_state_ == 1) {
    DS4_CUDA_CHECK(cudaStreamSynchronize(stream_));
    DS4_CUDA_CHECK(cudaProfilerStop());
    profile_at_state_ = 2;
  }
}

void CudaBackend::wait_idle() { DS4_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

CudaBackend::~CudaBackend() {
  if (options_.graph_stats) {
    std::fprintf(stderr, "ds4 cuda: %lld graph segments launched, %lld graph instantiations\n",
                 static_cast<long long>(graph_.counts().launches),
                 static_cast<long long>(graph_.counts().instantiations));
  }
  seqs_.clear();
  if (fork_ != nullptr) cudaEventDestroy(fork_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

Backend* make_cuda_backend(const BackendOptions& options) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) return nullptr;
  // Decode steps (one row) are submitted as CUDA graphs, cut into segments of
  // DS4_CUDA_GRAPH_SEGMENT sublayers (default 4; 0: one graph per step) that launch as they are
  // recorded (faster than eager launches on the H200); DS4_CUDA_GRAPHS=0 launches every kernel
  // eagerly. A step captured whole measured slower than eager launches: the GPU idled while the
  // host recorded it.
  // DS4_CUDA_GRAPH_STATS=1 reports the graphs' use on stderr at exit; DS4_CUDA_PROFILE_STEPS=N
  // opens a CUDA profiler range over the first N decode steps (one row per sequence; with
  // DS4_CUDA_PROFILE_ROWS=K, steps of K rows of one sequence: verifications) (ncu
  // --profile-from-start off), DS4_CUDA_PROFILE_AT=P over the first prefill chunk that starts at
  // position P or later.
  CudaBackend::Options o;
  o.graphs = env_switch("DS4_CUDA_GRAPHS", true);
  o.graph_stats = env_switch("DS4_CUDA_GRAPH_STATS", false);
  o.graph_segment = env_int("DS4_CUDA_GRAPH_SEGMENT", o.graph_segment, 0, 1 << 20);
  o.profile_steps = env_int("DS4_CUDA_PROFILE_STEPS", 0, 0, 1 << 20);
  o.profile_at = env_int("DS4_CUDA_PROFILE_AT", -1, 0, 1 << 30);
  o.profile_rows = env_int("DS4_CUDA_PROFILE_ROWS", 0, 0, 1 << 20);
  o.blas = options.cuda_blas;
  return new CudaBackend(o);
}

std::optional<uint64_t> CudaBackend::free_memory_bytes() const {
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  return free;
}

Result<Weight> CudaBackend::upload(const Weight& host) {
  const uint64_t n = static_cast<uint64_t>(host.ne[0] * host.ne[1] * host.ne[2]);
  const auto bytes = gguf::byte_size(host.type, n);
  if (!bytes)
    return Status::invalid_model("tensor of %llu values is not whole blocks",
                                 (unsigned long long)n);
  DeviceMemory m;
  if (!m.try_allocate(*bytes)) {
    return Status::resource_exhausted("GPU memory exhausted uploading a %.1f MiB tensor",
                                      static_cast<double>(*bytes) / (1 << 20));
  }
  Weight w = host;
  w.data = m.get();
  if (has_planar_layout(host.type)) {  // staged, then split into the planar layout
    if (staging_.bytes() < *bytes && !staging_.try_allocate(*bytes)) {
      return Status::resource_exhausted("GPU memory exhausted staging a %.1f MiB tensor",
                                        static_cast<double>(*bytes) / (1 << 20));
    }
    DS4_CUDA_CHECK(cudaMemcpy(staging_.get(), host.data, *bytes, cudaMemcpyHostToDevice));
    const int64_t blocks =
        static_cast<int64_t>(n / gguf::type_info(static_cast<uint32_t>(host.type))->block_elems);
    launch_pack_planar(host.type, staging_.get(), blocks, m.get(), stream_);
    DS4_CUDA_CHECK(cudaStreamSynchronize(stream_));
    w.layout = kLayoutPlanar;
  } else {
    DS4_CUDA_CHECK(cudaMemcpy(m.get(), host.data, *bytes, cudaMemcpyHostToDevice));
  }
  weights_.push_back(std::move(m));
  return w;
}

std::unique_ptr<Buffer> CudaBackend::alloc(int64_t n_floats) {
  return std::make_unique<DeviceBuffer>(n_floats);
}

void CudaBackend::grow(DeviceMemory& m, size_t bytes) {
  if (bytes <= m.bytes()) return;
  // Allocating waits for the device, which a recording step may not do.
  if (graph_.recording()) cut_recording();
  m.reserve(bytes);
}

void CudaBackend::cut_recording() {
  DS4_CHECK_MSG(lanes_forked_ == 0, "a recorded step cut short with a lane forked");
  graph_.end_and_launch(stream_);
}

float* CudaBackend::scratch(DeviceMemory& m, int64_t n_floats) {
  grow(m, sizeof(float) * static_cast<size_t>(n_floats));
  return m.floats();
}

unsigned* CudaBackend::tickets(int64_t n) {
  const size_t bytes = sizeof(unsigned) * static_cast<size_t>(n);
  if (bytes > tickets_.bytes()) {
    grow(tickets_, bytes);
    DS4_CUDA_CHECK(cudaMemsetAsync(tickets_.get(), 0, tickets_.bytes(), stream_));
  }
  return static_cast<unsigned*>(tickets_.get());
}

DeviceSequence& CudaBackend::sequence(int seq) {
  auto it = seqs_.find(seq);
  DS4_CHECK_MSG(it != seqs_.end(), "unknown sequence %d", seq);
  return *it->second;
}

Status CudaBackend::create_sequence(int seq, const SequenceLayout& layout) {
  if (seqs_.count(seq) != 0) return Status::invalid_argument("sequence %d already exists", seq);
  size_t free_b = 0, total_b = 0;
  DS4_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (layout.bytes() > free_b) {
    return Status::resource_exhausted(
        "KV state for %d tokens needs %.1f MiB, the GPU has %.1f free", layout.n_ctx,
        static_cast<double>(layout.bytes()) / (1 << 20), static_cast<double>(free_b) / (1 << 20));
  }
  staging_ = DeviceMemory();  // uploads are over once sequences exist
  auto s = std::make_unique<DeviceSequence>();
  s->layout = layout;
  s->layers.resize(layout.layers.size());
  const size_t hd = layout.head_dim, ihd = layout.indexer_head_dim;
  for (size_t il = 0; il < layout.layers.size(); ++il) {
    DeviceLayer& c = s->layers[il];
    const LayerLayout& l = layout.layers[il];
    c.lay = l;
    c.ring_cap = l.raw_cap + kMaxRunRows - 1;
    c.raw = DeviceMemory(sizeof(float) * c.ring_cap * hd);
    if (l.ratio != 0) {
      c.comp = DeviceMemory(sizeof(float) * l.comp_cap * hd);
      c.comp_kv = DeviceMemory(sizeof(float) * l.frontier_rows * l.frontier_width);
      c.comp_score = DeviceMemory(c.comp_kv.bytes());
    }
    if (l.ratio == 4) {
      c.index = DeviceMemory(sizeof(float) * l.comp_cap * ihd);
      c.index_kv = DeviceMemory(sizeof(float) * 8 * 256);
      c.index_score = DeviceMemory(sizeof(float) * 8 * 256);
    }
    reset_layer(c);
  }
  seqs_[seq] = std::move(s);
  last_step_rows_ = 0;
  return Status::ok();
}

void mark_lane(const DeviceLayer& c, const DeviceLayer::LaneMark& m, CompressorLane* lane) {
  if (c.mark < 0 || c.mark_lost) return;
  lane->mark = c.mark;
  lane->log_rows = DeviceLayer::kLogRows;
  lane->save_kv = m.save_kv.floats();
  lane->save_score = m.save_score.floats();
  lane->log_kv = m.log_kv.floats();
  lane->log_score = m.log_score.floats();
}

namespace {

// The device memory of a lane's mark: a frontier of `rows` x `width` and a log of kLogRows rows.
bool allocate_mark(DeviceLayer::LaneMark& m, int rows, int width) {
  if (m.log_score.bytes() != 0) return true;  // kept from an earlier mark (allocated last)
  const size_t frontier = sizeof(float) * rows * width;
  const size_t log = sizeof(float) * DeviceLayer::kLogRows * width;
  return m.save_kv.try_allocate(frontier) && m.save_score.try_allocate(frontier) &&
         m.log_kv.try_allocate(log) && m.log_score.try_allocate(log);
}

}  // namespace

Status CudaBackend::mark_sequence(int seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return Status::not_found("unknown sequence %d", seq);
  for (DeviceLayer& c : it->second->layers) {
    const bool ok = (c.lay.ratio == 0 ||
                     allocate_mark(c.comp_mark, c.lay.frontier_rows, c.lay.frontier_width)) &&
                    (c.lay.ratio != 4 || allocate_mark(c.index_mark, 8, 256));
    if (!ok) {
      settle_sequence(seq);
      return Status::resource_exhausted("no GPU memory left to mark sequence %d", seq);
    }
    c.mark = c.n_tokens;
    c.mark_lost = false;
  }
  return Status::ok();
}

Status CudaBackend::rewind_sequence(int seq, int n_tokens) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return Status::not_found("unknown sequence %d", seq);
  // Checked on every layer first, so a refusal changes nothing.
  for (const DeviceLayer& c : it->second->layers) {
    const int back = c.n_tokens - n_tokens;
    if (back < 0 || (back > 0 && (c.mark < 0 || n_tokens < c.mark || c.mark_lost))) {
      return Status::out_of_range("cannot take sequence %d back to %d tokens from %d", seq,
                                  n_tokens, c.n_tokens);
    }
  }
  for (DeviceLayer& c : it->second->layers) {
    if (c.n_tokens == n_tokens) continue;
    CompressorLane lane;
    if (c.lay.ratio != 0) {
      lane.ratio = c.lay.ratio;
      lane.hd = static_cast<int>(it->second->layout.head_dim);
      lane.st_kv = c.comp_kv.floats();
      lane.st_score = c.comp_score.floats();
      mark_lane(c, c.comp_mark, &lane);
      launch_lane_rewind(lane, n_tokens, c.n_tokens, stream_);
      c.n_comp = n_tokens / c.lay.ratio;
    }
    if (c.lay.ratio == 4) {
      lane.hd = static_cast<int>(it->second->layout.indexer_head_dim);
      lane.st_kv = c.index_kv.floats();
      lane.st_score = c.index_score.floats();
      mark_lane(c, c.index_mark, &lane);
      launch_lane_rewind(lane, n_tokens, c.n_tokens, stream_);
      c.n_index = n_tokens / 4;
    }
    c.n_tokens = n_tokens;
  }
  return Status::ok();
}

void CudaBackend::settle_sequence(int seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  for (DeviceLayer& c : it->second->layers) c.mark = -1;
}

void CudaBackend::drop_sequence(int seq) {
  seqs_.erase(seq);
  last_step_rows_ = 0;  // the next step runs eagerly
}

void CudaBackend::reset_sequence(int seq) {
  for (DeviceLayer& c : sequence(seq).layers) reset_layer(c);
  last_step_rows_ = 0;
}

void CudaBackend::pick_tokens(std::span<const PickRow> rows, std::span<Picked> out) {
  DS4_CHECK(out.size() == rows.size());
  if (rows.empty()) return;
  const int64_t n_vocab = rows[0].logits.cols;
  std::vector<PickRowArgs> args(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const PickRow& r = rows[i];
    DS4_CHECK(r.logits.rows == 1 && r.logits.cols == n_vocab && r.logits.data != nullptr);
    args[i] = {r.logits.data, r.temperature, r.min_p, r.uniform};
  }
  std::vector<PickResult> res(rows.size());
  grow(pick_args_, args.size() * sizeof(PickRowArgs));
  grow(pick_out_, res.size() * sizeof(PickResult));
  const auto n = static_cast<int>(rows.size());
  DS4_CUDA_CHECK(cudaMemcpyAsync(pick_args_.get(), args.data(), args.size() * sizeof(PickRowArgs),
                                 cudaMemcpyHostToDevice, stream_));
  launch_pick(static_cast<const PickRowArgs*>(pick_args_.get()), n, static_cast<int>(n_vocab),
              static_cast<PickResult*>(pick_out_.get()), stream_);
  DS4_CUDA_CHECK(cudaMemcpyAsync(res.data(), pick_out_.get(), res.size() * sizeof(PickResult),
                                 cudaMemcpyDeviceToHost, stream_));
  DS4_CUDA_CHECK(cudaStreamSynchronize(stream_));
  for (size_t i = 0; i < rows.size(); ++i) out[i] = {res[i].token, res[i].drew != 0};
}

void CudaBackend::do_download(Act src, float* host) {
  const size_t n = static_cast<size_t>(src.rows * src.cols);
  if (n == 0) return;
  DS4_CUDA_CHECK(
      cudaMemcpyAsync(host, src.data, n * sizeof(float), cudaMemcpyDeviceToHost, stream_));
  DS4_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::do_upload_act(const float* host, Act dst) {
  const size_t n = static_cast<size_t>(dst.rows * dst.cols);
  if (n == 0) return;
  // From pageable memory the copy is staged before the call returns: `host` may go after it.
  DS4_CUDA_CHECK(
      cudaMemcpyAsync(dst.data, host, n * sizeof(float), cudaMemcpyHostToDevice, stream_));
  DS4_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::do_embed(const Weight& table, std::span<const RowTag> rows, Act out) {
  const int32_t* tokens = device_tokens(rows);
  launch_embed(table.data, table.type, table.ne[0], tokens, static_cast<int64_t>(rows.size()),
               static_cast<int>(out.cols / table.ne[0]), out.data, stream_);
}

const int32_t* CudaBackend::device_tokens(std::span<const RowTag> rows) {
  if (graph_.recording() && (row_tokens_pinned_.size() < rows.size() ||
                             row_tokens_.bytes() < rows.size() * sizeof(int32_t))) {
    cut_recording();  // the buffers below must grow: see grow()
  }
  if (graph_.recording()) {  // a recorded copy from pinned memory (begin_step sized it)
    for (size_t r = 0; r < rows.size(); ++r) row_tokens_pinned_.data()[r] = rows[r].token;
    DS4_CUDA_CHECK(cudaMemcpyAsync(row_tokens_.get(), row_tokens_pinned_.data(),
                                   rows.size() * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
    row_tokens_host_.clear();  // the next eager step uploads again
    return static_cast<const int32_t*>(row_tokens_.get());
  }
  bool same = row_tokens_host_.size() == rows.size();
  for (size_t r = 0; same && r < rows.size(); ++r) same = row_tokens_host_[r] == rows[r].token;
  if (!same) {
    row_tokens_host_.resize(rows.size());
    for (size_t r = 0; r < rows.size(); ++r) row_tokens_host_[r] = rows[r].token;
    grow(row_tokens_, rows.size() * sizeof(int32_t));
    DS4_CUDA_CHECK(cudaMemcpyAsync(row_tokens_.get(), row_tokens_host_.data(),
                                   rows.size() * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
    // The host array may change with the next batch: wait until the copy has read it.
    DS4_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  return static_cast<const int32_t*>(row_tokens_.get());
}

void CudaBackend::do_rms_norm(Act x, const Weight* weight, int64_t segment, Act y) {
  launch_rms_norm(x.data, x.rows, x.cols, segment,
                  weight != nullptr ? static_cast<const float*>(weight->data) : nullptr, y.data,
                  stream_);
}

void CudaBackend::matmul_slots(const Weight& w, const float* x, int64_t x_rows, int64_t x_cols,
                               const int32_t* experts, const int32_t* rows, int64_t n_slots,
                               int groups, float* y, const SlotGroups* by_expert) {
  matmul_encoded(w, encode_for(w, x, x_rows, x_cols), x_cols, experts, rows, n_slots, groups, y,
                 by_expert);
}

const void* CudaBackend::encode_for(const Weight& w, const float* x, int64_t x_rows,
                                    int64_t x_cols) {
  // Float weights read the float activations as they are (their "encoding" is a copy).
  if (float_weight(w)) return x;
  grow(enc_, static_cast<size_t>(encoded_row_bytes(w.type, x_cols) * x_rows));
  launch_encode_rows(w.type, x, x_rows, x_cols, x_cols, enc_.get(), stream_);
  return enc_.get();
}

void CudaBackend::matmul_encoded(const Weight& w, const void* enc, int64_t x_cols,
                                 const int32_t* experts, const int32_t* rows, int64_t n_slots,
                                 int groups, float* y, const SlotGroups* by_expert) {
  const auto* xf = static_cast<const float*>(enc);  // float weights: enc is the float rows
  if (blas_ && BlasProducts::applies(w, experts, rows, groups, n_slots, xf)) {
    const int64_t need = blas_->scratch_bytes(w, n_slots);
    if (need > 0) grow(blas_scratch_, static_cast<size_t>(need));
    blas_->run(w, xf, n_slots, y, blas_scratch_.get(), stream_);
    return;
  }
  const int64_t split = matmul_split_bytes(w, n_slots, groups, experts != nullptr);
  if (split > 0) grow(split_, static_cast<size_t>(split));
  launch_matmul(w, enc, encoded_row_bytes(w.type, x_cols), experts, rows, n_slots, groups, y,
                w.ne[1], stream_, by_expert, PlanarPath::kAuto, split > 0 ? split_.get() : nullptr);
}

void CudaBackend::do_matmul(const Weight& w, Act x, Act y, int groups) {
  matmul_slots(w, x.data, x.rows, x.cols, nullptr, nullptr, x.rows, groups, y.data);
}

// Runs of products of one weight type, layout and row width share one encoding of x; a run of one
// row goes to launch_matmul_parts (kMaxParts at a time), which launches it as one kernel where
// one takes parts (with the SwiGLU fused into the down projection's encoding, this decoded Flash
// q2 faster on the H200 than separate launches).
void CudaBackend::do_matmuls(Act x, std::span<const Product> products) {
  size_t i = 0;
  while (i < products.size()) {
    const Weight& w = *products[i].w;
    size_t j = i + 1;
    while (j < products.size() && j - i < static_cast<size_t>(kMaxParts) &&
           products[j].w->type == w.type && products[j].w->layout == w.layout &&
           products[j].w->ne[0] == w.ne[0])
      ++j;
    const void* enc = encode_for(w, x.data, x.rows, x.cols);
    std::array<const Weight*, kMaxParts> ws{};
    std::array<float*, kMaxParts> ys{};
    for (size_t k = i; k < j; ++k) ws[k - i] = products[k].w, ys[k - i] = products[k].y.data;
    const size_t n = j - i;
    const bool fused = x.rows == 1 && n >= 2 &&
                       launch_matmul_parts(std::span(ws.data(), n), std::span(ys.data(), n), enc,
                                           encoded_row_bytes(w.type, x.cols), nullptr, nullptr, 1,
                                           products[i].y.cols, stream_);
    if (!fused) {
      for (size_t k = i; k < j; ++k) {
        matmul_encoded(*products[k].w, enc, x.cols, nullptr, nullptr, x.rows, 1,
                       products[k].y.data);
      }
    }
    i = j;
  }
}

void CudaBackend::sublayer_start() {
  graph_.boundary(stream_);  // a recorded step may launch what it has so far
}

void CudaBackend::do_hc_pre(const HcWeights& hc, Act x, Act cur, Act mix, const Weight* norm,
                            Act normed) {
  const int n_hc = static_cast<int>(x.cols / cur.cols);
  // Batches of at least kHcPreBatchRows rows run the HC pre-step as separate launches (the row
  // norm, the mixing product on the FP64 tensor cores, the mix, the collapse, the norm) instead
  // of hc_pre_rows_kernel, whose CTA per row reads the 24 x 16,384 mixing weights once per row.
  const bool split = x.rows >= kHcPreBatchRows;
  if (!split && hc.fn.layout == 0 && hc_pre_fusable(n_hc, hc.fn.type, hc.fn.ne[1])) {
    HcPreArgs a;
    a.x = x.data;
    a.rows = x.rows;
    a.n_embd = cur.cols;
    a.fn = hc.fn.data;
    a.scale = static_cast<const float*>(hc.scale.data);
    a.base = static_cast<const float*>(hc.base.data);
    a.iters = kSinkhornIters;
    a.mix = mix.data;
    a.cur = cur.data;
    a.norm = norm != nullptr ? static_cast<const float*>(norm->data) : nullptr;
    a.normed = normed.data;
    a.tickets = tickets(x.rows);
    launch_hc_pre(a, stream_);
    return;
  }
  float* flat = scratch(tmp_a_, x.rows * x.cols);
  launch_rms_norm(x.data, x.rows, x.cols, x.cols, nullptr, flat, stream_);
  matmul_slots(hc.fn, flat, x.rows, x.cols, nullptr, nullptr, x.rows, 1, mix.data);
  launch_hc_mix(mix.data, x.rows, n_hc, static_cast<const float*>(hc.scale.data),
                static_cast<const float*>(hc.base.data), kSinkhornIters, stream_);
  launch_hc_collapse(x.data, mix.data, x.rows, n_hc, cur.cols, cur.data, stream_);
  if (norm != nullptr) {
    launch_rms_norm(cur.data, cur.rows, cur.cols, cur.cols, static_cast<const float*>(norm->data),
                    normed.data, stream_);
  }
}

void CudaBackend::do_hc_post(Act x, Act f, Act mix, Act y) {
  launch_hc_post(x.data, f.data, mix.data, x.rows, static_cast<int>(x.cols / f.cols), f.cols,
                 y.data, stream_);
}

void CudaBackend::do_add(Act a, Act b, Act y) {
  launch_add(a.data, b.data, a.rows * a.cols, y.data, stream_);
}

void CudaBackend::do_steer(const Weight& direction, std::span<const RowTag> rows, Sublayer which,
                           Act y) {
  const float first = rows.empty() ? 0.0f : rows[0].steer_scale(which);
  bool uniform = true;
  for (const RowTag& r : rows) uniform = uniform && r.steer_scale(which) == first;
  const float* scales = nullptr;
  if (!uniform) {
    // Sessions of one batched step with scales of their own: the rows' scales on the device.
    // Only one-row steps are recorded as graphs, so this copy is eager and may wait.
    if (graph_.recording()) cut_recording();
    row_scales_host_.resize(rows.size());
    for (size_t r = 0; r < rows.size(); ++r) row_scales_host_[r] = rows[r].steer_scale(which);
    grow(row_scales_, rows.size() * sizeof(float));
    DS4_CUDA_CHECK(cudaMemcpyAsync(row_scales_.get(), row_scales_host_.data(),
                                   rows.size() * sizeof(float), cudaMemcpyHostToDevice, stream_));
    DS4_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the host array is reused by the next call
    scales = static_cast<const float*>(row_scales_.get());
  }
  launch_steer(static_cast<const float*>(direction.data), scales, first, y.rows, y.cols, y.data,
               stream_);
}

void CudaBackend::do_report_sublayer(int layer, Sublayer which, std::span<const RowTag> rows,
                                     Act y) {
  if (observer_ == nullptr) return;
  std::vector<float> host(static_cast<size_t>(y.rows * y.cols));
  do_download(y, host.data());
  report_sublayer_to(*observer_, layer, which, rows, host, y.cols);
}

void CudaBackend::do_copy(Act src, Act dst) {
  const size_t n = static_cast<size_t>(src.rows * src.cols);
  if (n == 0) return;
  DS4_CUDA_CHECK(
      cudaMemcpyAsync(dst.data, src.data, n * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::do_output_head(const OutputHead& h, Act x, std::span<const int> which,
                                 Act logits) {
  const int64_t n = static_cast<int64_t>(which.size()), n_hc = h.hc.fn.ne[1];
  const int64_t n_embd = x.cols / n_hc;
  float* xs = scratch(tmp_a_, n * x.cols);
  float* flat = scratch(tmp_b_, n * x.cols);
  float* pre = scratch(tmp_c_, n * n_hc);
  float* e = scratch(tmp_d_, n * n_embd);
  float* normed = scratch(tmp_e_, n * n_embd);
  for (int64_t i = 0; i < n; ++i) {
    DS4_CUDA_CHECK(cudaMemcpyAsync(xs + i * x.cols, x.row(which[i]), sizeof(float) * x.cols,
                                   cudaMemcpyDeviceToDevice, stream_));
  }
  launch_rms_norm(xs, n, x.cols, x.cols, nullptr, flat, stream_);
  matmul_slots(h.hc.fn, flat, n, x.cols, nullptr, nullptr, n, 1, pre);
  launch_head_collapse(xs, pre, static_cast<const float*>(h.hc.scale.data),
                       static_cast<const float*>(h.hc.base.data), n, static_cast<int>(n_hc), n_embd,
                       e, stream_);
  launch_rms_norm(e, n, n_embd, n_embd, static_cast<const float*>(h.norm.data), normed, stream_);
  matmul_slots(h.output, normed, n, n_embd, nullptr, nullptr, n, 1, logits.data);
}

}  // namespace ds4::backend::cuda
