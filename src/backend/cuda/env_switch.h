// src/backend/cuda/env_switch.h: the on/off environment switches of the CUDA backend
// (DS4_CUDA_*), used to compare a kernel path with its alternative on the device. A switch that is
// on by default turns off only for "0"; one that is off by default turns on only for "1"; any
// other value leaves the default.
#pragma once

#include <cstdlib>
#include <string_view>

namespace ds4::backend::cuda {

inline bool env_switch(const char* name, bool default_on) {
  const char* v = std::getenv(name);
  if (v == nullptr) return default_on;
  return default_on ? std::string_view(v) != "0" : std::string_view(v) == "1";
}

}  // namespace ds4::backend::cuda
