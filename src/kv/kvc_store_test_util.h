// src/kv/kvc_store_test_util.h: what the disk KV cache directory's tests share: a header of a
// given token count, a filler payload, store options with a fixed clock and a log, a lookup query.
// Owns: nothing the store uses; test-only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kv/kvc_store.h"

namespace ds4::kv::testing {

inline KvcHeader header(uint32_t tokens) {
  KvcHeader h;
  h.tokens = tokens;
  h.n_ctx = 4096;
  h.reason = SaveReason::kContinued;
  return h;
}

inline std::vector<uint8_t> payload(size_t n) { return std::vector<uint8_t>(n, 0x5a); }

inline KvcStoreOptions options(const std::string& dir, uint64_t budget,
                               std::vector<std::string>* logs) {
  KvcStoreOptions o;
  o.dir = dir;
  o.budget_bytes = budget;
  o.now = [] { return uint64_t{1764576000}; };
  o.log = [logs](const std::string& l) { logs->push_back(l); };
  return o;
}

inline KvcQuery query() {
  KvcQuery q;
  q.min_tokens = 1;
  q.n_ctx = 4096;
  return q;
}

}  // namespace ds4::kv::testing
