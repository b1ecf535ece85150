// src/base/x86/checksum_avx2.cpp: the checksum's stripe loop with AVX2 (the one file of base built
// with -mavx2; checksum.cpp calls it only where cpu_features() reports AVX2). Each 256-bit
// register holds 4 of the 16 lanes; _mm256_mul_epu32 multiplies the low 32 bits of each 64-bit
// lane, which is exactly (x mod 2^32) * (x >> 32) once the high half is shifted down.
#include <immintrin.h>

#include "base/checksum_kernels.h"

namespace ds4::base::checksum_detail {

namespace {

// One 32-byte quarter of a stripe: 4 lanes.
inline void lanes(const uint8_t* p, __m256i& a, __m256i& k, __m256i step) {
  const __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i x = _mm256_xor_si256(d, k);
  const __m256i m = _mm256_mul_epu32(x, _mm256_srli_epi64(x, 32));
  a = _mm256_add_epi64(a, _mm256_add_epi64(m, d));
  k = _mm256_add_epi64(k, step);
}

}  // namespace

// The four sums and keys stay in registers (named variables: GCC kept an array of them in memory,
// which halved the speed).
void stripes_avx2_impl(const uint8_t* p, size_t stripes, uint64_t* acc, uint64_t* key) {
  const auto load = [](const uint64_t* q) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
  };
  const auto store = [](uint64_t* q, __m256i v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), v);
  };
  __m256i a0 = load(acc), a1 = load(acc + 4), a2 = load(acc + 8), a3 = load(acc + 12);
  __m256i k0 = load(key), k1 = load(key + 4), k2 = load(key + 8), k3 = load(key + 12);
  const __m256i step = _mm256_set1_epi64x(static_cast<long long>(kWeyl));
  for (size_t s = 0; s < stripes; ++s, p += kStripeBytes) {
    lanes(p, a0, k0, step);
    lanes(p + 32, a1, k1, step);
    lanes(p + 64, a2, k2, step);
    lanes(p + 96, a3, k3, step);
  }
  store(acc, a0), store(acc + 4, a1), store(acc + 8, a2), store(acc + 12, a3);
  store(key, k0), store(key + 4, k1), store(key + 8, k2), store(key + 12, k3);
}

}  // namespace ds4::base::checksum_detail
