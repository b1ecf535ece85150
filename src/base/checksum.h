// src/base/checksum.h: a fast 64-bit non-cryptographic checksum of byte strings, written here for
// the disk KV cache's files (kv/kvc_file.h), which hold hundreds of megabytes and are hashed on
// every load. It detects damage (flipped bits, zeroed or rewritten ranges, truncation, reordered
// blocks) with a miss probability of about 2^-64 for a random change; it is no defence against
// someone who forges a file on purpose.
// Owns: the function's definition (below), its portable and AVX2 stripe kernels (chosen once per
// process from cpu_features(); both give the same bits), and the streaming and one-shot forms.
// Does not own: where a digest is stored or what it covers (the file formats that use it).
//
// Definition (version 1; files on disk depend on every detail, so checksum_test.cpp pins it):
// - mix(x) is the splitmix64 finalizer: x ^= x >> 30, x *= 0xbf58476d1ce4e5b9, x ^= x >> 27,
//   x *= 0x94d049bb133111eb, x ^= x >> 31. W = 0x9e3779b97f4a7c15 (2^64 / golden ratio).
// - The input is cut into blocks of kChecksumBlockBytes (64 KiB), the last one shorter; the empty
//   input has no block. Block i of n bytes under seed S has the start s = mix(S ^ mix(i + W)),
//   16 lane keys k[l] = mix(s + (l + 1) * W) and 16 lane sums a[l] = 0. Each 128-byte stripe (the
//   last one zero-padded) is 16 little-endian u64 words d[l]; per lane, x = d[l] ^ k[l],
//   a[l] += (x mod 2^32) * (x >> 32) + d[l], then k[l] += W (so the same words at another place
//   give other products: reordering is seen). The block digest is mix(mix(s ^ n) + sum over l of
//   mix(a[l] ^ k0[l])), k0 the keys before the first stripe.
// - The stream starts at t = mix(S ^ W); each block digest, in order, makes t = mix(t ^ digest);
//   the checksum is mix(t ^ mix(total bytes + S)).
// The 16 independent lanes keep the multipliers busy: 45-50 GB/s on one core of the 2-core
// development VM with AVX2, from the cache (bench/kvcache.md); ~15 GB/s from memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ds4::base {

inline constexpr size_t kChecksumBlockBytes = size_t{64} << 10;

// Checksum of bytes fed in pieces; any split of the same bytes gives the same digest. Pieces that
// keep to the 64 KiB block grid are hashed where they lie; the rest goes through a one-block
// buffer.
class Checksum {
 public:
  explicit Checksum(uint64_t seed = 0);
  void update(std::span<const uint8_t> bytes);
  // The checksum of everything fed so far (the state is unchanged: more may follow).
  uint64_t digest() const;
  uint64_t bytes() const { return total_; }
  // update() of whole blocks hashed apart (threads over one buffer): the digests of the next
  // blocks, each of kChecksumBlockBytes, by checksum_block() under this stream's seed at indexes
  // blocks(), blocks() + 1, ... Only where nothing partial is pending (at_block_boundary()).
  void add_blocks(std::span<const uint64_t> digests);
  uint64_t blocks() const { return blocks_; }
  bool at_block_boundary() const { return partial_.empty(); }

 private:
  void add_block(const uint8_t* data, size_t n);

  uint64_t seed_;
  uint64_t state_;
  uint64_t blocks_ = 0;
  uint64_t total_ = 0;
  std::vector<uint8_t> partial_;  // the start of a block not yet complete
};

// The digest of block `index` of a stream under `seed` (at most kChecksumBlockBytes bytes).
uint64_t checksum_block(std::span<const uint8_t> block, uint64_t seed, uint64_t index);

// The checksum of `bytes` in one call.
uint64_t checksum64(std::span<const uint8_t> bytes, uint64_t seed = 0);

// "avx2" or "portable": the stripe kernel this process uses (benchmarks print it).
const char* checksum_kernel_name();

}  // namespace ds4::base
