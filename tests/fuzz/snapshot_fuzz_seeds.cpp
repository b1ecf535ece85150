// Writes one valid DSV4 session payload (tiny shape, T = 5, context 64, prefill chunk 32: the
// fuzzer's fixed target) into a directory, as the snapshot fuzzer's starting corpus.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "kv/snapshot.h"
#include "model/shape.h"

namespace {

std::vector<float> ramp(size_t n, float start) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + 0.001f * static_cast<float>(i % 4096);
  return v;
}

bool write_seed(const std::string& path, const std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: snapshot_fuzz_seeds DIR\n");
    return 2;
  }
  const ds4::model::Shape& s = ds4::model::kTiny;
  const uint32_t t = 5, ctx = 64;
  ds4::kv::Snapshot snap;
  snap.n_ctx = ctx;
  snap.prefill_chunk = 32;
  snap.tokens = {0, 1, 2, 1000, s.n_vocab - 1};
  snap.logits = ramp(static_cast<size_t>(s.n_vocab), -1.0f);
  const uint32_t live =
      std::min<uint32_t>(t, std::min<uint32_t>(static_cast<uint32_t>(s.n_swa), ctx));
  snap.layers.resize(static_cast<size_t>(s.n_layer));
  for (int il = 0; il < s.n_layer; ++il) {
    ds4::backend::LayerState& l = snap.layers[static_cast<size_t>(il)];
    const int r = s.compress_ratio(il);
    const float base = static_cast<float>(il);
    l.n_tokens = static_cast<int32_t>(t);
    l.raw = ramp(size_t{live} * 512, base);
    if (r != 0) {
      const size_t frontier = static_cast<size_t>((r == 4 ? 2 : 1) * r) * s.compressor_width(il);
      l.comp = ramp(size_t{t / static_cast<uint32_t>(r)} * 512, base + 0.5f);
      l.comp_kv = ramp(frontier, base + 0.25f);
      l.comp_score = std::vector<float>(frontier, -1e30f);
    }
    if (r == 4) {
      l.index = ramp(size_t{t / 4} * 128, base + 0.75f);
      l.index_kv = ramp(8 * 256, base + 0.125f);
      l.index_score = std::vector<float>(8 * 256, -1e30f);
    }
  }
  // The payload, and a shard of its layers 1..2 (what one process of a route holds).
  ds4::kv::Shard shard{.first = 1, .last = 2, .n_tokens = t, .n_ctx = ctx, .prefill_chunk = 32};
  shard.layers.assign(snap.layers.begin() + 1, snap.layers.begin() + 3);
  const bool ok =
      write_seed(std::string(argv[1]) + "/tiny_t5_ctx64.dsv4", ds4::kv::encode_snapshot(s, snap)) &&
      write_seed(std::string(argv[1]) + "/tiny_t5_ctx64_layers1-2.ds4l",
                 ds4::kv::encode_shard(s, shard));
  return ok ? 0 : 1;
}
