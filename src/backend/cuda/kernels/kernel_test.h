// src/backend/cuda/kernels/kernel_test.h: what the device kernel tests share: GoogleTest, or,
// with DS4_STANDALONE_TEST defined, a small stand-in for the few GoogleTest macros they use (for
// machines without GoogleTest: tools/cuda/run_kernel_tests.sh builds them as one plain program,
// matmul_check, whose main() is in matmul_q_test.cpp); device detection, an owning device buffer
// and fresh seeds.
#pragma once

#ifdef DS4_STANDALONE_TEST
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace mini_test {
struct Test {
  const char* name;
  void (*fn)();
};
inline std::vector<Test>& registry() {
  static std::vector<Test> tests;
  return tests;
}
inline bool& failed() {
  static bool f = false;
  return f;
}
inline bool& skipped() {
  static bool s = false;
  return s;
}
struct Registrar {
  Registrar(const char* name, void (*fn)()) { registry().push_back({name, fn}); }
};
// Collects "<< ..." and reports a failure (or a skip) when the statement ends.
class Message {
 public:
  Message(const char* file, int line, const char* what, bool skip = false)
      : file_(file), line_(line), what_(what), skip_(skip) {}
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;
  template <class T>
  Message& operator<<(const T& v) {
    os_ << v;
    return *this;
  }
  ~Message() {
    if (skip_) {
      skipped() = true;
      std::printf("  skipped: %s\n", os_.str().c_str());
    } else {
      failed() = true;
      std::printf("  %s:%d: failed: %s %s\n", file_, line_, what_, os_.str().c_str());
    }
  }

 private:
  const char* file_;
  int line_;
  const char* what_;
  bool skip_;
  std::ostringstream os_;
};
struct Voidify {
  void operator&(const Message&) {}
};
}  // namespace mini_test

#define TEST(suite, name)                                                          \
  static void suite##_##name();                                                    \
  static const ::mini_test::Registrar suite##_##name##_registrar(#suite "." #name, \
                                                                 suite##_##name);  \
  static void suite##_##name()
#define GTEST_SKIP() \
  return ::mini_test::Voidify() & ::mini_test::Message(__FILE__, __LINE__, "", true)
#define EXPECT_TRUE(c) \
  switch (0)           \
  case 0:              \
  default:             \
    if (c) {           \
    } else             \
      ::mini_test::Message(__FILE__, __LINE__, #c)
#define ASSERT_TRUE(c) \
  switch (0)           \
  case 0:              \
  default:             \
    if (c) {           \
    } else             \
      return ::mini_test::Voidify() & ::mini_test::Message(__FILE__, __LINE__, #c)
#define EXPECT_EQ(a, b) EXPECT_TRUE((a) == (b)) << "[" << (a) << " vs " << (b) << "] "
#define EXPECT_FALSE(c) EXPECT_TRUE(!(c))
#else
#include <gtest/gtest.h>
#endif

#include <cuda_runtime.h>

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
