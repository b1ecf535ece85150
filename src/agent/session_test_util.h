// src/agent/session_test_util.h: fixtures of the session-file tests: DSV4 payloads (a real one,
// encoded by kv::encode_snapshot for the tiny test shape, and cheap ones whose header alone is
// real), file byte helpers, and store options with a fixed clock.
// Owns: nothing the store uses; test-only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "agent/session_store.h"
#include "agent/test_util.h"
#include "kv/snapshot.h"
#include "model/shape.h"

namespace ds4::agent::testing {

inline constexpr uint64_t kNow = 1764576000;  // 2025-12-01
inline constexpr char kFingerprint[] = "deepseek-v4-flash q2 test-fingerprint";

// A payload Session::save() could have written for the tiny shape: `tokens` tokens, context
// `n_ctx`, zero state (kv::encode_snapshot checks its sizes).
inline std::vector<uint8_t> real_payload(uint32_t tokens, uint32_t n_ctx = 256) {
  const model::Shape& s = model::kTiny;
  kv::Snapshot snap;
  snap.n_ctx = n_ctx;
  snap.prefill_chunk = 32;
  snap.tokens.assign(tokens, 7);
  snap.logits.assign(static_cast<size_t>(s.n_vocab), 0.5f);
  const uint32_t live = std::min<uint32_t>(tokens, std::min<uint32_t>(s.n_swa, n_ctx));
  snap.layers.resize(static_cast<size_t>(s.n_layer));
  for (int il = 0; il < s.n_layer; ++il) {
    backend::LayerState& l = snap.layers[static_cast<size_t>(il)];
    const int r = s.compress_ratio(il);
    l.n_tokens = static_cast<int32_t>(tokens);
    l.raw.assign(size_t{live} * 512, 0.25f);
    if (r != 0) {
      const size_t frontier = static_cast<size_t>((r == 4 ? 2 : 1) * r) * s.compressor_width(il);
      l.comp.assign(size_t{tokens / static_cast<uint32_t>(r)} * 512, 1.0f);
      l.comp_kv.assign(frontier, 0.0f);
      l.comp_score.assign(frontier, -1e30f);
    }
    if (r == 4) {
      l.index.assign(size_t{tokens / 4} * 128, 2.0f);
      l.index_kv.assign(8 * 256, 0.0f);
      l.index_score.assign(8 * 256, 0.0f);
    }
  }
  return kv::encode_snapshot(s, snap);
}

// A payload whose 13-field DSV4 header declares `tokens`, followed by `extra` filler bytes: what
// the store reads of a payload (it never decodes the rest).
inline std::vector<uint8_t> fake_payload(uint32_t tokens, size_t extra = 200) {
  const uint32_t fields[13] = {kv::kSnapshotMagic,
                               kv::kSnapshotVersion,
                               4096,
                               32,
                               128,
                               128,
                               1026,
                               tokens,
                               6,
                               512,
                               128,
                               129280,
                               std::min<uint32_t>(tokens, 128)};
  std::vector<uint8_t> out(sizeof fields + extra, 0xa5);
  std::memcpy(out.data(), fields, sizeof fields);
  return out;
}

inline SessionStore::Options store_options(const std::string& dir,
                                           std::string fingerprint = kFingerprint,
                                           uint8_t quant_bits = 2) {
  SessionStore::Options o;
  o.dir = dir;
  o.model = {.fingerprint = std::move(fingerprint), .quant_bits = quant_bits};
  o.max_file_bytes = uint64_t{1} << 30;
  o.now = [] { return kNow; };
  return o;
}

inline std::vector<uint8_t> read_all(const std::string& path) {
  const std::string s = get_file(path);
  return {s.begin(), s.end()};
}

inline void write_all(const std::string& path, const std::vector<uint8_t>& bytes) {
  put_file(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace ds4::agent::testing
