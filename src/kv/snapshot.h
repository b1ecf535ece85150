// src/kv/snapshot.h: the DSV4 session payload (model.md §5.3; features.md §3.1: version 2).
// Owns: the byte layout -- 13 u32 header fields, token ids, next-token logits, per-layer row
// counts, then per layer the live raw rows (oldest first), compressed rows and compressor
// frontier, indexer rows and frontier -- and every check a payload must pass before it is used.
// Does not own: where the state lives (backend) or files (engine/session).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "ds4/status.h"
#include "model/shape.h"

namespace ds4::kv {

inline constexpr uint32_t kSnapshotMagic = 0x34565344;  // "DSV4"
inline constexpr uint32_t kSnapshotVersion = 2;

struct Snapshot {
  uint32_t n_ctx = 0;          // context size of the session that wrote it
  uint32_t prefill_chunk = 0;  // its prefill chunk (recorded; loads require the same value)
  std::vector<int32_t> tokens;
  std::vector<float> logits;                // n_vocab
  std::vector<backend::LayerState> layers;  // n_layer, n_tokens = tokens.size()
};

// Where the payload is going to be loaded.
struct LoadTarget {
  uint32_t n_ctx = 0;
  uint32_t prefill_chunk = 0;
};

// Serialises a snapshot (its sizes must already be consistent with `shape`; checked).
std::vector<uint8_t> encode_snapshot(const model::Shape& shape, const Snapshot& snap);
// Exact payload size of a snapshot, and of any snapshot of `t` tokens at context `n_ctx`.
uint64_t snapshot_bytes(const model::Shape& shape, const Snapshot& snap);
uint64_t snapshot_bytes(const model::Shape& shape, uint32_t n_ctx, uint32_t t);
// The payload up to its layers (header, token ids, logits, row counts) appended to `out`: the
// head that Session::save_to writes before the backend's layers (Backend::export_sequence_into).
void append_snapshot_head(std::vector<uint8_t>* out, const model::Shape& shape, uint32_t n_ctx,
                          uint32_t prefill_chunk, std::span<const int32_t> tokens,
                          std::span<const float> logits);
// The token count a payload declares (header field 7), once its magic and version are checked:
// what a caller compares with another record of it before the payload goes into a session.
Result<uint32_t> snapshot_tokens(std::span<const uint8_t> bytes);
// A payload's layers where they lie (a session's load reads them in place, issue 55 item 4).
struct SnapshotView {
  uint32_t n_ctx = 0;
  uint32_t prefill_chunk = 0;
  std::vector<int32_t> tokens;
  std::vector<float> logits;
  std::vector<backend::LayerStateView> layers;  // into the payload's bytes
};
// Parses and validates a payload for a session of `shape` and `target` settings. Errors name the
// offending field; nothing is allocated beyond what the payload's length can hold. The view's
// layers point into `bytes`, which must outlive them.
Result<SnapshotView> view_snapshot(std::span<const uint8_t> bytes, const model::Shape& shape,
                                   const LoadTarget& target);
// The same checks, the layers copied out.
Result<Snapshot> decode_snapshot(std::span<const uint8_t> bytes, const model::Shape& shape,
                                 const LoadTarget& target);

// A layer shard: the state of layers first..last of a session of n_tokens tokens -- what one
// process of a distributed route holds, gathered into (or split from) one DSV4 payload. Layout
// (u32 little-endian): magic "DS4L", version 1, first, last, n_tokens, n_ctx, prefill_chunk, then
// per layer the payload's rows in its order (raw window, compressed rows and frontier, indexer
// rows and frontier), their counts implied by n_tokens.
inline constexpr uint32_t kShardMagic = 0x4c345344;  // "DS4L"
inline constexpr uint32_t kShardVersion = 1;

struct Shard {
  uint32_t first = 0, last = 0;  // inclusive layer range
  uint32_t n_tokens = 0;
  uint32_t n_ctx = 0;
  uint32_t prefill_chunk = 0;
  std::vector<backend::LayerState> layers;  // last - first + 1
};

std::vector<uint8_t> encode_shard(const model::Shape& shape, const Shard& shard);
// Parses and validates a shard for a session of `target` settings (the same checks as a payload's
// layers). Errors name the field.
Result<Shard> decode_shard(std::span<const uint8_t> bytes, const model::Shape& shape,
                           const LoadTarget& target);

}  // namespace ds4::kv
