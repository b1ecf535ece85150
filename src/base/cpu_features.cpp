// src/base/cpu_features.cpp: CPUID + XGETBV probe (see cpu_features.h).
#include "base/cpu_features.h"

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace ds4::base {
namespace {

CpuFeatures probe() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return f;
  const bool osxsave = (c >> 27) & 1;
  if (!osxsave) return f;
  uint32_t xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const bool ymm = (xcr0_lo & 0x6) == 0x6;           // SSE and AVX state
  const bool zmm = ymm && (xcr0_lo & 0xe0) == 0xe0;  // opmask, ZMM_Hi256, Hi16_ZMM state
  f.avx = ymm && ((c >> 28) & 1);
  f.fma = f.avx && ((c >> 12) & 1);
  f.f16c = f.avx && ((c >> 29) & 1);
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) != 0) {
    f.avx2 = f.avx && ((b >> 5) & 1);
    f.avx512f = zmm && ((b >> 16) & 1);
    f.avx512bw = f.avx512f && ((b >> 30) & 1);
    f.avx512vl = f.avx512f && ((b >> 31) & 1);
    f.avx512vbmi = f.avx512f && ((c >> 1) & 1);
    f.avx512vnni = f.avx512f && ((c >> 11) & 1);
    f.avx512bitalg = f.avx512f && ((c >> 12) & 1);
  }
#endif
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures kFeatures = probe();
  return kFeatures;
}

}  // namespace ds4::base
