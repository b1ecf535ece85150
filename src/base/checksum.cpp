// src/base/checksum.cpp: the block structure, the portable stripe loop and the kernel choice of
// the checksum (see checksum.h for the definition).
#include "base/checksum.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "base/check.h"
#include "base/checksum_kernels.h"
#include "base/cpu_features.h"

namespace ds4::base {
namespace checksum_detail {

#if defined(DS4_BASE_HAVE_AVX2)
void stripes_avx2_impl(const uint8_t* p, size_t stripes, uint64_t* acc, uint64_t* key);
#endif

namespace {

uint64_t load_le64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

}  // namespace

void stripes_portable(const uint8_t* p, size_t stripes, uint64_t* acc, uint64_t* key) {
  for (size_t s = 0; s < stripes; ++s, p += kStripeBytes) {
    for (size_t l = 0; l < kLanes; ++l) {
      const uint64_t d = load_le64(p + 8 * l);
      const uint64_t x = d ^ key[l];
      acc[l] += (x & 0xffffffffull) * (x >> 32) + d;
      key[l] += kWeyl;
    }
  }
}

StripeKernel stripes_avx2() {
#if defined(DS4_BASE_HAVE_AVX2)
  return cpu_features().avx2 ? &stripes_avx2_impl : nullptr;
#else
  return nullptr;
#endif
}

}  // namespace checksum_detail

namespace {

using checksum_detail::kLanes;
using checksum_detail::kStripeBytes;
using checksum_detail::kWeyl;

uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Chosen once per process (an immutable value, like cpu_features()).
checksum_detail::StripeKernel kernel() {
  static const checksum_detail::StripeKernel kKernel = [] {
    const checksum_detail::StripeKernel avx2 = checksum_detail::stripes_avx2();
    return avx2 != nullptr ? avx2 : &checksum_detail::stripes_portable;
  }();
  return kKernel;
}

// The digest of block `index` (n <= kChecksumBlockBytes bytes) under `seed`.
uint64_t block_digest(const uint8_t* data, size_t n, uint64_t seed, uint64_t index) {
  const uint64_t s = mix(seed ^ mix(index + kWeyl));
  uint64_t key[kLanes], key0[kLanes], acc[kLanes] = {};
  for (size_t l = 0; l < kLanes; ++l) key0[l] = key[l] = mix(s + (l + 1) * kWeyl);
  const size_t whole = n / kStripeBytes;
  kernel()(data, whole, acc, key);
  if (const size_t rest = n % kStripeBytes; rest != 0) {
    uint8_t last[kStripeBytes] = {};
    std::memcpy(last, data + whole * kStripeBytes, rest);
    kernel()(last, 1, acc, key);
  }
  uint64_t h = mix(s ^ n);
  for (size_t l = 0; l < kLanes; ++l) h += mix(acc[l] ^ key0[l]);
  return mix(h);
}

}  // namespace

Checksum::Checksum(uint64_t seed) : seed_(seed), state_(mix(seed ^ kWeyl)) {}

void Checksum::add_block(const uint8_t* data, size_t n) {
  state_ = mix(state_ ^ block_digest(data, n, seed_, blocks_));
  ++blocks_;
}

void Checksum::update(std::span<const uint8_t> bytes) {
  total_ += bytes.size();
  if (!partial_.empty()) {
    const size_t take = std::min(bytes.size(), kChecksumBlockBytes - partial_.size());
    // resize + memcpy rather than insert(span iterators): GCC 13 -O3 reports a bogus
    // -Wstringop-overflow on the iterator form.
    const size_t had = partial_.size();
    partial_.resize(had + take);
    if (take > 0) std::memcpy(partial_.data() + had, bytes.data(), take);
    bytes = bytes.subspan(take);
    if (partial_.size() < kChecksumBlockBytes) return;
    add_block(partial_.data(), partial_.size());
    partial_.clear();
  }
  while (bytes.size() >= kChecksumBlockBytes) {
    add_block(bytes.data(), kChecksumBlockBytes);
    bytes = bytes.subspan(kChecksumBlockBytes);
  }
  partial_.assign(bytes.begin(), bytes.end());
}

void Checksum::add_blocks(std::span<const uint64_t> digests) {
  DS4_CHECK(partial_.empty());
  for (uint64_t d : digests) state_ = mix(state_ ^ d);
  blocks_ += digests.size();
  total_ += digests.size() * kChecksumBlockBytes;
}

uint64_t checksum_block(std::span<const uint8_t> block, uint64_t seed, uint64_t index) {
  DS4_CHECK(block.size() <= kChecksumBlockBytes);
  return block_digest(block.data(), block.size(), seed, index);
}

uint64_t Checksum::digest() const {
  uint64_t t = state_;
  if (!partial_.empty())
    t = mix(t ^ block_digest(partial_.data(), partial_.size(), seed_, blocks_));
  return mix(t ^ mix(total_ + seed_));
}

uint64_t checksum64(std::span<const uint8_t> bytes, uint64_t seed) {
  // Checksum's arithmetic without its buffer: every block, the last one too, hashed where it lies.
  uint64_t t = mix(seed ^ kWeyl);
  uint64_t index = 0;
  for (size_t at = 0; at < bytes.size(); at += kChecksumBlockBytes, ++index) {
    const size_t n = std::min(kChecksumBlockBytes, bytes.size() - at);
    t = mix(t ^ block_digest(bytes.data() + at, n, seed, index));
  }
  return mix(t ^ mix(bytes.size() + seed));
}

const char* checksum_kernel_name() {
  return kernel() == &checksum_detail::stripes_portable ? "portable" : "avx2";
}

}  // namespace ds4::base
