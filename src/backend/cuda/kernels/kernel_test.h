// src/backend/cuda/kernels/kernel_test.h: what the device kernel tests (backend_cuda_test,
// label cuda) share: device detection, an owning device buffer and fresh seeds.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "backend/cuda/check.h"

namespace ds4::backend::cuda::test {

inline bool have_device() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  (void)cudaGetLastError();  // clear the error a device-less machine reports
  return err == cudaSuccess && n > 0;
}

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0) DS4_CUDA_CHECK(cudaMalloc(&p_, bytes_));
  }
  ~DeviceBuffer() {
    if (p_ != nullptr) cudaFree(p_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr; }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;

  template <class T = void>
  T* get() const {
    return static_cast<T*>(p_);
  }
  void upload(const void* src, size_t bytes) {
    DS4_CUDA_CHECK(cudaMemcpy(p_, src, bytes, cudaMemcpyHostToDevice));
  }
  void download(void* dst, size_t bytes) const {
    DS4_CUDA_CHECK(cudaMemcpy(dst, p_, bytes, cudaMemcpyDeviceToHost));
  }
  void fill(int byte) { DS4_CUDA_CHECK(cudaMemset(p_, byte, bytes_)); }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

template <class T>
DeviceBuffer to_device(const std::vector<T>& v) {
  DeviceBuffer b(v.size() * sizeof(T));
  if (!v.empty()) b.upload(v.data(), v.size() * sizeof(T));
  return b;
}

// A fresh seed per test (printed with any failure, so a failure can be replayed).
inline uint32_t fresh_seed() { return std::random_device{}(); }

}  // namespace ds4::backend::cuda::test
