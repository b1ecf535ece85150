// src/kv/snapshot.cpp: DSV4 payload encode/decode.
#include "kv/snapshot.h"

#include <algorithm>
#include <cstring>

#include "base/byte_buffer.h"
#include "base/check.h"

namespace ds4::kv {
namespace {

constexpr int kHd = 512;
constexpr int kIhd = 128;
constexpr int kHeaderFields = 13;

uint32_t raw_window(const model::Shape& s, uint32_t n_ctx) {
  return std::min<uint32_t>(static_cast<uint32_t>(s.n_swa), n_ctx);
}

// Capacity field 6: compressed rows of the first ratio-4 layer.
uint32_t comp_capacity(const model::Shape& s, uint32_t n_ctx) {
  for (int il = 0; il < s.n_layer; ++il) {
    if (s.compress_ratio(il) == 4) return n_ctx / 4 + 2;
  }
  return 0;
}

size_t frontier_floats(const model::Shape& s, int il) {
  const int r = s.compress_ratio(il);
  return r == 0 ? 0 : static_cast<size_t>((r == 4 ? 2 : 1) * r) * s.compressor_width(il);
}

class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& out) : out_(out) {}
  void u32(uint32_t v) { bytes(&v, sizeof v); }
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }

 private:
  std::vector<uint8_t>& out_;
};

class Parser {
 public:
  explicit Parser(std::span<const uint8_t> b) : b_(b) {}
  size_t left() const { return b_.size() - at_; }
  size_t offset() const { return at_; }
  bool u32(uint32_t* v) {
    if (left() < 4) return false;
    std::memcpy(v, b_.data() + at_, 4);
    at_ += 4;
    return true;
  }
  // n floats; fails (without allocating) when fewer bytes remain.
  bool floats(uint64_t n, std::vector<float>* v) {
    backend::FloatBytes where;
    if (!view(n, &where)) return false;
    v->resize(where.count);
    if (n != 0) std::memcpy(v->data(), where.data, n * sizeof(float));
    return true;
  }
  // n floats where they lie; fails when fewer bytes remain.
  bool view(uint64_t n, backend::FloatBytes* v) {
    if (n > left() / sizeof(float)) return false;
    *v = {.data = b_.data() + at_, .count = static_cast<size_t>(n)};
    at_ += n * sizeof(float);
    return true;
  }

 private:
  std::span<const uint8_t> b_;
  size_t at_ = 0;
};

Status truncated(const Parser& p, const char* what) {
  return Status::invalid_file("snapshot truncated in %s at byte %zu", what, p.offset());
}

// One layer of `t` tokens with `live` raw rows, `n_comp` / `n_index` rows, where it lies, in the
// payload's order (backend::append_layer_state's); false when cut.
bool view_layer(Parser& p, const model::Shape& s, int il, uint32_t t, uint32_t live,
                uint32_t n_comp, uint32_t n_index, backend::LayerStateView* l) {
  l->n_tokens = static_cast<int32_t>(t);
  const uint64_t frontier = frontier_floats(s, il);
  bool ok = p.view(uint64_t{live} * kHd, &l->raw);
  if (ok && s.compress_ratio(il) != 0) {
    ok = p.view(uint64_t{n_comp} * kHd, &l->comp) && p.view(frontier, &l->comp_kv) &&
         p.view(frontier, &l->comp_score);
  }
  if (ok && s.compress_ratio(il) == 4) {
    ok = p.view(uint64_t{n_index} * kIhd, &l->index) && p.view(8 * 256, &l->index_kv) &&
         p.view(8 * 256, &l->index_score);
  }
  return ok;
}

}  // namespace

uint64_t snapshot_bytes(const model::Shape& shape, const Snapshot& snap) {
  uint64_t n = 4ull * kHeaderFields + 4ull * snap.tokens.size() + 4ull * snap.logits.size() +
               8ull * shape.n_layer;
  for (const backend::LayerState& l : snap.layers) {
    n += 4ull * (l.raw.size() + l.comp.size() + l.comp_kv.size() + l.comp_score.size() +
                 l.index.size() + l.index_kv.size() + l.index_score.size());
  }
  return n;
}

uint64_t snapshot_bytes(const model::Shape& s, uint32_t n_ctx, uint32_t t) {
  const uint64_t live = std::min(t, raw_window(s, n_ctx));
  uint64_t floats = uint64_t{t} + static_cast<uint64_t>(s.n_vocab) + 2ull * s.n_layer;
  for (int il = 0; il < s.n_layer; ++il) {
    const int r = s.compress_ratio(il);
    floats += live * kHd;
    if (r != 0) floats += uint64_t{t / static_cast<uint32_t>(r)} * kHd + 2 * frontier_floats(s, il);
    if (r == 4) floats += uint64_t{t / 4} * kIhd + 2 * 8 * 256;
  }
  return 4ull * kHeaderFields + 4 * floats;
}

namespace {

// Sizes a consistent snapshot of `t` tokens must have (the decoder's rules); a violation is a bug
// in the caller, so it aborts instead of writing a file that would not load.
// (The token count, token ids and logits are append_snapshot_head's checks.)
void check_consistent(const model::Shape& s, const Snapshot& snap, uint32_t live) {
  const auto t = static_cast<uint32_t>(snap.tokens.size());
  DS4_CHECK(static_cast<int>(snap.layers.size()) == s.n_layer);
  for (int il = 0; il < s.n_layer; ++il) {
    const backend::LayerState& l = snap.layers[il];
    const int r = s.compress_ratio(il);
    const size_t frontier = frontier_floats(s, il);
    DS4_CHECK(l.raw.size() == size_t{live} * kHd);
    DS4_CHECK(l.comp.size() == (r == 0 ? 0 : size_t{t / static_cast<uint32_t>(r)} * kHd));
    DS4_CHECK(l.comp_kv.size() == frontier && l.comp_score.size() == frontier);
    const bool idx = r == 4;
    DS4_CHECK(l.index.size() == (idx ? size_t{t / 4} * kIhd : 0));
    DS4_CHECK(l.index_kv.size() == (idx ? 8u * 256 : 0u) &&
              l.index_score.size() == l.index_kv.size());
  }
}

}  // namespace

void append_snapshot_head(std::vector<uint8_t>* out, const model::Shape& s, uint32_t n_ctx,
                          uint32_t prefill_chunk, std::span<const int32_t> tokens,
                          std::span<const float> logits) {
  const auto t = static_cast<uint32_t>(tokens.size());
  DS4_CHECK(t >= 1 && t < n_ctx);
  DS4_CHECK(static_cast<int>(logits.size()) == s.n_vocab);
  for (int32_t tok : tokens) DS4_CHECK(tok >= 0 && tok < s.n_vocab);
  const uint32_t window = raw_window(s, n_ctx);
  Writer w(*out);
  for (uint32_t v : {kSnapshotMagic, kSnapshotVersion, n_ctx, prefill_chunk, window, window,
                     comp_capacity(s, n_ctx), t, static_cast<uint32_t>(s.n_layer), uint32_t{kHd},
                     uint32_t{kIhd}, static_cast<uint32_t>(s.n_vocab), std::min(t, window)}) {
    w.u32(v);
  }
  w.bytes(tokens.data(), tokens.size() * sizeof(int32_t));
  w.bytes(logits.data(), logits.size() * sizeof(float));
  for (int il = 0; il < s.n_layer; ++il) {
    const int r = s.compress_ratio(il);
    w.u32(r == 0 ? 0 : t / static_cast<uint32_t>(r));
  }
  for (int il = 0; il < s.n_layer; ++il) w.u32(s.compress_ratio(il) == 4 ? t / 4 : 0);
}

std::vector<uint8_t> encode_snapshot(const model::Shape& s, const Snapshot& snap) {
  const auto t = static_cast<uint32_t>(snap.tokens.size());
  std::vector<uint8_t> out;
  out.reserve(static_cast<size_t>(snapshot_bytes(s, snap.n_ctx, t)));
  base::advise_huge_pages(out.data(), out.capacity());
  append_snapshot_head(&out, s, snap.n_ctx, snap.prefill_chunk, snap.tokens, snap.logits);
  check_consistent(s, snap, std::min(t, raw_window(s, snap.n_ctx)));
  for (const backend::LayerState& l : snap.layers) backend::append_layer_state(&out, l);
  DS4_CHECK(out.size() == snapshot_bytes(s, snap.n_ctx, t));
  return out;
}

// The header's fields, its magic and version checked.
Status read_header(Parser& p, uint32_t (&h)[kHeaderFields]) {
  for (uint32_t& v : h) {
    if (!p.u32(&v)) return truncated(p, "the header");
  }
  if (h[0] != kSnapshotMagic) return Status::invalid_file("not a DSV4 session payload (bad magic)");
  if (h[1] != kSnapshotVersion) {
    return Status::invalid_file("DSV4 payload version %u, this engine reads version %u", h[1],
                                kSnapshotVersion);
  }
  return Status::ok();
}

Result<uint32_t> snapshot_tokens(std::span<const uint8_t> bytes) {
  Parser p(bytes);
  uint32_t h[kHeaderFields];
  if (Status st = read_header(p, h); !st.is_ok()) return st;
  return h[7];
}

Result<SnapshotView> view_snapshot(std::span<const uint8_t> bytes, const model::Shape& s,
                                   const LoadTarget& target) {
  Parser p(bytes);
  uint32_t h[kHeaderFields];
  if (Status st = read_header(p, h); !st.is_ok()) return st;
  if (h[8] != static_cast<uint32_t>(s.n_layer) || h[9] != kHd || h[10] != kIhd ||
      h[11] != static_cast<uint32_t>(s.n_vocab)) {
    return Status::invalid_argument(
        "payload is for another model (%u layers, head %u, indexer head %u, vocab %u; this model: "
        "%d layers, vocab %d)",
        h[8], h[9], h[10], h[11], s.n_layer, s.n_vocab);
  }
  SnapshotView snap;
  snap.n_ctx = h[2];
  snap.prefill_chunk = h[3];
  const uint32_t t = h[7];
  if (snap.n_ctx == 0 || snap.n_ctx > target.n_ctx) {
    return Status::invalid_argument("payload context %u does not fit this session's context %u",
                                    snap.n_ctx, target.n_ctx);
  }
  if (t == 0 || t >= snap.n_ctx) {
    return Status::invalid_argument("payload token count %u is invalid for its context %u", t,
                                    snap.n_ctx);
  }
  if (snap.prefill_chunk != target.prefill_chunk) {
    return Status::invalid_argument("payload prefill chunk %u differs from this session's %u",
                                    snap.prefill_chunk, target.prefill_chunk);
  }
  const uint32_t window = raw_window(s, snap.n_ctx);
  if (h[4] != window || h[5] != window || window != raw_window(s, target.n_ctx)) {
    return Status::invalid_argument("payload raw window %u/%u does not match this session's %u",
                                    h[4], h[5], raw_window(s, target.n_ctx));
  }
  if (h[6] != comp_capacity(s, snap.n_ctx) || h[6] > comp_capacity(s, target.n_ctx)) {
    return Status::invalid_argument("payload compressed capacity %u is inconsistent", h[6]);
  }
  const uint32_t live = std::min(t, window);
  if (h[12] != live)
    return Status::invalid_argument("payload live raw rows %u, expected %u", h[12], live);

  if (p.left() / 4 < t) return truncated(p, "the token ids");
  snap.tokens.resize(t);
  for (int32_t& tok : snap.tokens) {
    uint32_t v = 0;
    (void)p.u32(&v);
    if (v >= static_cast<uint32_t>(s.n_vocab)) {
      return Status::invalid_argument("payload token id %u is outside the vocabulary", v);
    }
    tok = static_cast<int32_t>(v);
  }
  if (!p.floats(static_cast<uint64_t>(s.n_vocab), &snap.logits)) return truncated(p, "the logits");
  std::vector<uint32_t> n_comp(s.n_layer), n_index(s.n_layer);
  for (uint32_t& v : n_comp) {
    if (!p.u32(&v)) return truncated(p, "the compressed row counts");
  }
  for (uint32_t& v : n_index) {
    if (!p.u32(&v)) return truncated(p, "the indexer row counts");
  }
  for (int il = 0; il < s.n_layer; ++il) {
    const int r = s.compress_ratio(il);
    const uint32_t want_comp = r == 0 ? 0 : t / static_cast<uint32_t>(r);
    const uint32_t want_index = r == 4 ? t / 4 : 0;
    if (n_comp[il] != want_comp || n_index[il] != want_index) {
      return Status::invalid_argument(
          "layer %d: %u compressed / %u indexer rows, expected %u / %u for %u tokens", il,
          n_comp[il], n_index[il], want_comp, want_index, t);
    }
  }
  snap.layers.resize(s.n_layer);
  for (int il = 0; il < s.n_layer; ++il) {
    if (!view_layer(p, s, il, t, live, n_comp[il], n_index[il], &snap.layers[il])) {
      return truncated(p, "the layer state");
    }
  }
  if (p.left() != 0) {
    return Status::invalid_file("payload has %zu trailing bytes after the last layer", p.left());
  }
  return snap;
}

Result<Snapshot> decode_snapshot(std::span<const uint8_t> bytes, const model::Shape& s,
                                 const LoadTarget& target) {
  DS4_ASSIGN_OR_RETURN(SnapshotView v, view_snapshot(bytes, s, target));
  Snapshot snap{.n_ctx = v.n_ctx,
                .prefill_chunk = v.prefill_chunk,
                .tokens = std::move(v.tokens),
                .logits = std::move(v.logits),
                .layers = {}};
  snap.layers.reserve(v.layers.size());
  for (const backend::LayerStateView& l : v.layers) snap.layers.push_back(backend::to_state(l));
  return snap;
}

std::vector<uint8_t> encode_shard(const model::Shape& s, const Shard& shard) {
  DS4_CHECK(shard.first <= shard.last && shard.last < static_cast<uint32_t>(s.n_layer));
  DS4_CHECK(shard.layers.size() == shard.last - shard.first + 1);
  std::vector<uint8_t> out;
  Writer w(out);
  for (uint32_t v : {kShardMagic, kShardVersion, shard.first, shard.last, shard.n_tokens,
                     shard.n_ctx, shard.prefill_chunk}) {
    w.u32(v);
  }
  for (uint32_t il = shard.first; il <= shard.last; ++il) {
    backend::append_layer_state(&out, shard.layers[il - shard.first]);
  }
  return out;
}

Result<Shard> decode_shard(std::span<const uint8_t> bytes, const model::Shape& s,
                           const LoadTarget& target) {
  Parser p(bytes);
  uint32_t h[7];
  for (uint32_t& v : h) {
    if (!p.u32(&v)) return truncated(p, "the shard header");
  }
  if (h[0] != kShardMagic || h[1] != kShardVersion) {
    return Status::invalid_file("not a DS4L layer shard of version %u", kShardVersion);
  }
  Shard shard{.first = h[2], .last = h[3], .n_tokens = h[4], .n_ctx = h[5], .prefill_chunk = h[6]};
  if (shard.first > shard.last || shard.last >= static_cast<uint32_t>(s.n_layer)) {
    return Status::invalid_argument("shard layers %u:%u of a %d-layer model", shard.first,
                                    shard.last, s.n_layer);
  }
  if (shard.n_ctx == 0 || shard.n_ctx > target.n_ctx || shard.n_tokens == 0 ||
      shard.n_tokens >= shard.n_ctx) {
    return Status::invalid_argument("shard of %u tokens at context %u for a session of %u",
                                    shard.n_tokens, shard.n_ctx, target.n_ctx);
  }
  if (shard.prefill_chunk != target.prefill_chunk) {
    return Status::invalid_argument("shard prefill chunk %u differs from this session's %u",
                                    shard.prefill_chunk, target.prefill_chunk);
  }
  const uint32_t window = raw_window(s, shard.n_ctx);
  if (window != raw_window(s, target.n_ctx)) {
    return Status::invalid_argument("shard raw window %u does not match this session's %u", window,
                                    raw_window(s, target.n_ctx));
  }
  const uint32_t t = shard.n_tokens, live = std::min(t, window);
  shard.layers.resize(shard.last - shard.first + 1);
  for (uint32_t il = shard.first; il <= shard.last; ++il) {
    const int r = s.compress_ratio(static_cast<int>(il));
    backend::LayerStateView v;
    if (!view_layer(p, s, static_cast<int>(il), t, live, r == 0 ? 0 : t / static_cast<uint32_t>(r),
                    r == 4 ? t / 4 : 0, &v)) {
      return truncated(p, "the shard's layer state");
    }
    shard.layers[il - shard.first] = backend::to_state(v);
  }
  if (p.left() != 0) return Status::invalid_file("shard has %zu trailing bytes", p.left());
  return shard;
}

}  // namespace ds4::kv
