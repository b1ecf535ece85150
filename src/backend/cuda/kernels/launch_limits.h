// src/backend/cuda/kernels/launch_limits.h: the launch limits and alignment tests that the kernels'
// host-side launchers share.
#pragma once

#include <cstdint>

namespace ds4::backend::cuda {

// CUDA's limit on gridDim.y and gridDim.z (gridDim.x reaches 2^31 - 1).
constexpr int64_t kMaxGridYZ = 65535;

// gridDim.y for a kernel that walks `rows` rows from blockIdx.y with a stride of gridDim.y.
inline unsigned grid_y_for(int64_t rows) {
  return static_cast<unsigned>(rows < kMaxGridYZ ? rows : kMaxGridYZ);
}

// Whether p is a multiple of `bytes` (a power of two).
inline bool aligned_to(const void* p, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes) == 0;
}
// Whether p may be read or written by 16-byte accesses (cp.async.cg, float4, int4).
inline bool aligned16(const void* p) { return aligned_to(p, 16); }

}  // namespace ds4::backend::cuda
