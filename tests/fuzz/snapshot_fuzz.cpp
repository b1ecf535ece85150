// libFuzzer target for the DSV4 session payload parser and its layer shards (src/kv/snapshot.cpp;
// a shard begins with its own magic, so one input goes to both decoders): any byte string must
// decode or fail with a Status, never crash, hang or read out of bounds (ASan/UBSan
// instrumented). A payload that decodes must re-encode to exactly the input bytes: every header
// field is derived from the decoded snapshot, so accepting a payload the encoder would not write
// means a check is missing. The target is fixed: the tiny test shape, context 64, prefill chunk 32.
// Valid payloads are large (~1.8 MB for T = 5: tiny keeps the full 129280-entry vocabulary and two
// ratio-128 frontiers of 2 x 128 x 512 floats), so run with -max_len of at least 2 MiB to let the
// seed through; shorter inputs still exercise the header, token and count checks.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "kv/snapshot.h"
#include "model/shape.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ds4::model::Shape& shape = ds4::model::kTiny;
  const ds4::kv::LoadTarget target{.n_ctx = 64, .prefill_chunk = 32};
  if (auto shard = ds4::kv::decode_shard(std::span<const uint8_t>(data, size), shape, target);
      shard.is_ok()) {
    const std::vector<uint8_t> again = ds4::kv::encode_shard(shape, shard.value());
    if (again.size() != size || std::memcmp(again.data(), data, size) != 0) {
      std::fprintf(stderr, "re-encoded shard differs from the input (%zu vs %zu bytes)\n",
                   again.size(), size);
      std::abort();
    }
    return 0;
  }
  auto r = ds4::kv::decode_snapshot(std::span<const uint8_t>(data, size), shape, target);
  if (!r.is_ok()) return 0;
  const ds4::kv::Snapshot& snap = r.value();
  if (ds4::kv::snapshot_bytes(shape, snap) != size) {
    std::fprintf(stderr, "snapshot_bytes %llu != input size %zu\n",
                 static_cast<unsigned long long>(ds4::kv::snapshot_bytes(shape, snap)), size);
    std::abort();
  }
  const std::vector<uint8_t> again = ds4::kv::encode_snapshot(shape, snap);
  if (again.size() != size || std::memcmp(again.data(), data, size) != 0) {
    std::fprintf(stderr, "re-encoded payload differs from the input (%zu vs %zu bytes)\n",
                 again.size(), size);
    std::abort();
  }
  return 0;
}
