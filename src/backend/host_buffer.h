// src/backend/host_buffer.h: an activation buffer in host memory (the CPU backend's, and any
// host-side backend's).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace ds4::backend {

class HostBuffer final : public Buffer {
 public:
  explicit HostBuffer(int64_t n) : v_(static_cast<size_t>(n)) {}
  float* data() override { return v_.data(); }
  int64_t size() const override { return static_cast<int64_t>(v_.size()); }

 private:
  std::vector<float> v_;
};

}  // namespace ds4::backend
