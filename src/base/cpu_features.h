// src/base/cpu_features.h: which optional x86 instruction sets this CPU and OS let us use.
// Owns: the one CPUID/XGETBV probe, made once per process (an immutable result, not mutable state).
// Does not own: kernel selection (each module picks its kernels from these flags).
#pragma once

namespace ds4::base {

struct CpuFeatures {
  bool avx = false;  // and the OS saves YMM state
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;  // and the OS saves ZMM state
  bool avx512bw = false;
  bool avx512vl = false;  // this and the flags below imply avx512f
  bool avx512vnni = false;
  bool avx512vbmi = false;
  bool avx512bitalg = false;
};

// All false on non-x86 builds. CPUID is read directly rather than through
// __builtin_cpu_supports, whose feature names vary between compilers (clang < 16 lacks "f16c").
const CpuFeatures& cpu_features();

}  // namespace ds4::base
