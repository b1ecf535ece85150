// src/backend/cuda/session_io.cpp: a sequence's state out of and into device memory (snapshots,
// issue 55 item 4). Export writes each layer's parts into the payload in its order straight from
// where they lie on the device (the raw ring in at most two runs, oldest row first), import copies
// them from where they lie in the payload: one copy per part (two for a wrapped ring), with no
// host copy of the state in between, the payload page-locked meanwhile (PinnedRange). Page-locked
// staging (two 8 MiB buffers, the device's copy of one chunk beside the host's of the last)
// measured no faster on an H100 for a 418.5 MB state (import 45.1 vs 41.0 ms, export 74.5 vs 77.1)
// and was removed: locking the payload itself needs no second host copy. The frontier rows that
// hold nothing after n tokens are normalised in the payload (frontier.h), so equal states save
// equal bytes.
#include <algorithm>
#include <array>
#include <functional>
#include <span>
#include <vector>

#include "backend/cuda/check.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/frontier.h"

namespace ds4::backend::cuda {
namespace {

// The ring slots of a layer's n_raw newest rows, oldest first: one run, or two where they wrap.
struct RingRun {
  int slot = 0;
  int rows = 0;
};
std::array<RingRun, 2> ring_runs(const DeviceLayer& c, int n_raw) {
  const int head = (c.n_tokens - n_raw) % c.ring_cap;
  const int first = std::min(n_raw, c.ring_cap - head);
  return {RingRun{head, first}, RingRun{0, n_raw - first}};
}

int live_raw(const DeviceLayer& c) { return std::min(c.lay.raw_cap, c.n_tokens); }

// The floats of each part a layer of s exports (its live raw rows, then the parts after them).
PartCounts export_counts(const DeviceSequence& s, const DeviceLayer& c) {
  return part_counts(c.lay, s.layout.head_dim, s.layout.indexer_head_dim, live_raw(c), c.n_comp,
                     c.n_index);
}

// A layer part's device bytes and where they go (export) or come from (import) on the host.
struct HostCopy {
  const void* device = nullptr;
  size_t bytes = 0;
};

// The device addresses of a layer's parts after the raw rows, in payload order.
std::array<const DeviceMemory*, 6> parts_after_raw(const DeviceLayer& c) {
  return {&c.comp, &c.comp_kv, &c.comp_score, &c.index, &c.index_kv, &c.index_score};
}

// The payload's host range page-locked for the copies of an export or import (cudaHostRegister),
// so that they run at the link's speed instead of through the driver's staging, and unlocked
// after. Measured on an H100 (Flash cut to 30 layers, a 399 MB session, medians of 5): import 22.1
// ms against 43.4 from pageable memory, export 72.6 against 82.6, a restart's first token 52.3 ms
// against 78.4 (locking and unlocking 420 MB: ~10 and ~7 ms). Below kPinBytes the fixed cost of
// the two calls is not paid back; where locking fails (memory already locked, a read-only
// mapping) the copies run from pageable memory.
constexpr size_t kPinBytes = size_t{16} << 20;
class PinnedRange {
 public:
  PinnedRange(const void* p, size_t bytes) {
    if (bytes < kPinBytes) return;
    if (cudaHostRegister(const_cast<void*>(p), bytes, cudaHostRegisterDefault) == cudaSuccess) {
      p_ = const_cast<void*>(p);
    } else {
      (void)cudaGetLastError();  // not locked: pageable copies
    }
  }
  ~PinnedRange() {
    if (p_ != nullptr) (void)cudaHostUnregister(p_);
  }
  PinnedRange(const PinnedRange&) = delete;
  PinnedRange& operator=(const PinnedRange&) = delete;

 private:
  void* p_ = nullptr;
};

// Where a frontier pair landed in the payload, to normalise once it is there.
struct FrontierAt {
  size_t kv = 0, score = 0;
  int ratio = 0, width = 0, n_tokens = 0;
};

}  // namespace

Status CudaBackend::export_sequence_into(int seq, std::span<uint8_t> out,
                                         const std::function<void(size_t)>& done) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return Status::not_found("unknown sequence %d", seq);
  const DeviceSequence& s = *it->second;
  const int hd = s.layout.head_dim;
  std::vector<HostCopy> pieces;
  std::vector<FrontierAt> frontiers;
  // Where each layer's pieces and frontiers end, and its last byte: its bytes are final once
  // they are copied and its frontiers normalised (done).
  struct LayerEnd {
    size_t pieces, frontiers, bytes;
  };
  std::vector<LayerEnd> ends;
  size_t at = 0;
  for (const DeviceLayer& c : s.layers) {
    const int n_raw = live_raw(c);
    const PartCounts n = export_counts(s, c);
    for (const RingRun& r : ring_runs(c, n_raw)) {
      pieces.push_back({c.raw.floats() + static_cast<size_t>(r.slot) * hd,
                        sizeof(float) * static_cast<size_t>(r.rows) * hd});
    }
    at += sizeof(float) * n[0];
    const std::array<const DeviceMemory*, 6> parts = parts_after_raw(c);
    std::array<size_t, 6> part_at{};
    for (size_t i = 0; i < parts.size(); ++i) {
      part_at[i] = at;
      if (n[i + 1] == 0) continue;
      pieces.push_back({parts[i]->get(), sizeof(float) * n[i + 1]});
      at += sizeof(float) * n[i + 1];
    }
    if (c.lay.ratio != 0) {
      frontiers.push_back({part_at[1], part_at[2], c.lay.ratio, c.lay.frontier_width, c.n_tokens});
    }
    if (c.lay.ratio == 4) frontiers.push_back({part_at[4], part_at[5], 4, 256, c.n_tokens});
    ends.push_back({pieces.size(), frontiers.size(), at});
  }
  if (at != out.size()) return layers_size_mismatch(out.size(), at);
  DS4_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the state the queued work writes
  const PinnedRange pinned(out.data(), out.size());
  size_t to = 0, piece = 0, frontier = 0;
  for (const LayerEnd& e : ends) {
    for (; piece < e.pieces; ++piece) {
      const HostCopy& p = pieces[piece];
      DS4_CUDA_CHECK(cudaMemcpy(out.data() + to, p.device, p.bytes, cudaMemcpyDeviceToHost));
      to += p.bytes;
    }
    for (; frontier < e.frontiers; ++frontier) {
      const FrontierAt& f = frontiers[frontier];
      normalise_unused_rows(out.data() + f.kv, out.data() + f.score, f.ratio, f.width, f.n_tokens);
    }
    if (done) done(e.bytes);
  }
  return Status::ok();
}

Status CudaBackend::import_sequence_view(int seq, std::span<const LayerStateView> state) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return Status::not_found("unknown sequence %d", seq);
  DeviceSequence& s = *it->second;
  const size_t hd = s.layout.head_dim, ihd = s.layout.indexer_head_dim;
  DS4_TRY(check_state_fits(s.layout, state));  // before anything changes
  for (size_t il = 0; il < state.size(); ++il) {
    const LayerStateView& st = state[il];
    if (st.n_tokens < 0 || st.raw.count / hd > static_cast<size_t>(st.n_tokens)) {
      return Status::invalid_argument("layer %zu: %zu raw rows after %d tokens", il,
                                      st.raw.count / hd, st.n_tokens);
    }
  }
  DS4_CUDA_CHECK(cudaStreamSynchronize(stream_));
  // The host bytes every part lies in: one range in a payload (parts in order, a layer after
  // another), locked only then; parts in separate allocations (import_sequence's LayerStates)
  // could span other memory between them, and are copied from pageable memory.
  const uint8_t* lo = nullptr;
  const uint8_t* hi = nullptr;
  size_t total = 0;
  for (const LayerStateView& st : state) {
    for (const FloatBytes* f : parts_of(st)) {
      if (f->count == 0) continue;
      lo = lo == nullptr ? f->data : std::min(lo, f->data);
      hi = std::max(hi, f->data + sizeof(float) * f->count);
      total += sizeof(float) * f->count;
    }
  }
  const auto span = static_cast<size_t>(hi - lo);
  const PinnedRange pinned(lo, span <= total + total / 64 ? span : 0);
  // From pageable memory (unless locked): each copy is staged by the driver before it returns.
  auto upload = [this](void* device, const uint8_t* host, size_t bytes) {
    if (bytes != 0) {
      DS4_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_));
    }
  };
  for (size_t il = 0; il < state.size(); ++il) {
    const LayerStateView& st = state[il];
    DeviceLayer& c = s.layers[il];
    c.n_tokens = st.n_tokens;
    c.n_comp = static_cast<int>(st.comp.count / hd);
    c.n_index = static_cast<int>(st.index.count / ihd);
    c.mark = -1;
    // Slots outside the window read as zeros, as in a sequence that computed its rows.
    DS4_CUDA_CHECK(cudaMemsetAsync(c.raw.get(), 0, c.raw.bytes(), stream_));
    const uint8_t* raw = st.raw.data;
    for (const RingRun& r : ring_runs(c, static_cast<int>(st.raw.count / hd))) {
      const size_t bytes = sizeof(float) * static_cast<size_t>(r.rows) * hd;
      upload(c.raw.floats() + static_cast<size_t>(r.slot) * hd, raw, bytes);
      raw += bytes;
    }
    const std::array<const DeviceMemory*, 6> parts = parts_after_raw(c);
    const std::array<const FloatBytes*, 7> from = parts_of(st);
    for (size_t i = 0; i < parts.size(); ++i) {
      upload(parts[i]->get(), from[i + 1]->data, sizeof(float) * from[i + 1]->count);
    }
  }
  DS4_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return Status::ok();
}

Result<std::vector<LayerState>> CudaBackend::export_sequence(int seq) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return Status::not_found("unknown sequence %d", seq);
  const DeviceSequence& s = *it->second;
  std::vector<PartCounts> counts;
  size_t total = 0;
  for (const DeviceLayer& c : s.layers) {
    counts.push_back(export_counts(s, c));
    for (size_t n : counts.back()) total += sizeof(float) * n;
  }
  std::vector<uint8_t> bytes(total);
  DS4_TRY(export_sequence_into(seq, bytes, {}));
  std::vector<LayerState> out;
  out.reserve(s.layers.size());
  const uint8_t* p = bytes.data();
  for (size_t il = 0; il < s.layers.size(); ++il) {
    out.push_back(to_state(take_layer_view(&p, s.layers[il].n_tokens, counts[il])));
  }
  DS4_CHECK(p == bytes.data() + bytes.size());
  return out;
}

Status CudaBackend::import_sequence(int seq, const std::vector<LayerState>& state) {
  return import_sequence_view(seq, views_of(state));
}

}  // namespace ds4::backend::cuda
