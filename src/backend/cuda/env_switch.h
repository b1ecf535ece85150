// src/backend/cuda/env_switch.h: the on/off environment switches of the CUDA backend
// (DS4_CUDA_*, docs/engine.md), each for a user or a test. A switch that is on by default turns
// off only for "0"; one that is off by default turns on only for "1"; any other value leaves the
// default. env_int reads a number, clamped to [lo, hi] (atoi's reading: text that is not a number
// reads as 0), or the default when unset.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <string_view>

namespace ds4::backend::cuda {

inline bool env_switch(const char* name, bool default_on) {
  const char* v = std::getenv(name);
  if (v == nullptr) return default_on;
  return default_on ? std::string_view(v) != "0" : std::string_view(v) == "1";
}

inline int env_int(const char* name, int fallback, int lo, int hi) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::clamp(std::atoi(v), lo, hi) : fallback;
}

}  // namespace ds4::backend::cuda
