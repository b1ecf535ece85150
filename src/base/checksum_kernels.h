// src/base/checksum_kernels.h: the stripe loops of base/checksum.h, one per instruction set.
// Owns: their common signature and the lane arithmetic constants. Internal to base (checksum.cpp
// and its test); callers use checksum.h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ds4::base::checksum_detail {

inline constexpr size_t kLanes = 16;
inline constexpr size_t kStripeBytes = kLanes * 8;
inline constexpr uint64_t kWeyl = 0x9e3779b97f4a7c15ull;  // the key step, 2^64 / golden ratio

// Adds `stripes` stripes of 128 bytes at `p` into the lane sums `acc`, advancing the lane keys
// `key` by kWeyl per stripe (checksum.h, "Definition").
using StripeKernel = void (*)(const uint8_t* p, size_t stripes, uint64_t* acc, uint64_t* key);

void stripes_portable(const uint8_t* p, size_t stripes, uint64_t* acc, uint64_t* key);
// The AVX2 loop, or nullptr where this build or CPU has none.
StripeKernel stripes_avx2();

}  // namespace ds4::base::checksum_detail
