// src/backend/cuda/env_switch.h: the on/off environment switches of the CUDA backend
// (DS4_CUDA_*), used to compare a kernel path with its alternative on the device. A switch that is
// on by default turns off only for "0"; one that is off by default turns on only for "1"; any
// other value leaves the default. env_choice reads a small count the same way: one of the allowed
// values, else the default. env_int reads a number, clamped to [lo, hi] (atoi's reading: text
// that is not a number reads as 0), or the default when unset.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>

namespace ds4::backend::cuda {

inline bool env_switch(const char* name, bool default_on) {
  const char* v = std::getenv(name);
  if (v == nullptr) return default_on;
  return default_on ? std::string_view(v) != "0" : std::string_view(v) == "1";
}

inline int env_choice(const char* name, std::initializer_list<int> allowed, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  for (int a : allowed) {
    if (std::string_view(v) == std::to_string(a)) return a;
  }
  return fallback;
}

inline int env_int(const char* name, int fallback, int lo, int hi) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::clamp(std::atoi(v), lo, hi) : fallback;
}

}  // namespace ds4::backend::cuda
