// src/base/det_math.h: the transcendental functions of the forward pass (exp, log1p, sin/cos),
// defined by this code rather than by a math library, so the CPU and CUDA backends compute them
// bit for bit alike. Only IEEE +, -, *, /, comparisons, rounding to integer and exponent
// arithmetic are used; translation units that include this must not contract a * b + c into a
// fused multiply-add (host: -ffp-contract=off, device: -fmad=false). Accuracy: expf within ~2
// ulp; sin/cos and log1p are evaluated in double and rounded once, so they are within 1 ulp.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define DS4_HD __host__ __device__
#else
#define DS4_HD
#endif

namespace ds4::detmath {

DS4_HD inline float bits_to_float(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

DS4_HD inline double bits_to_double(uint64_t b) {
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
}

// 2^k as a float for -149 <= k <= 127 (subnormal powers included).
DS4_HD inline float pow2f(int k) {
  if (k >= -126) return bits_to_float(static_cast<uint32_t>(k + 127) << 23);
  return bits_to_float(uint32_t{1} << (k + 149));
}

// e^x. Cody-Waite reduction x = k ln2 + r (|r| <= ln2 / 2), degree-7 Taylor polynomial for e^r,
// then scaling by 2^k in two steps (so subnormal results round once).
DS4_HD inline float expf(float x) {
  if (!(x == x)) return x;                                        // NaN
  if (x > 88.72283935546875f) return bits_to_float(0x7f800000u);  // overflow: +inf
  if (x < -103.97208404541015625f) return 0.0f;
  const float kf = rintf(x * 1.44269502162933349609375f);
  const int k = static_cast<int>(kf);
  float r = x - kf * 0.693145751953125f;   // ln2 high part: 16 bits, kf * it is exact
  r = r - kf * 1.428606765330187045e-06f;  // ln2 low part
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  if (k > 127) return (p * 2.0f) * pow2f(k - 1);
  if (k < -126) return (p * pow2f(k + 64)) * pow2f(-64);
  return p * pow2f(k);
}

// sin and cos of x, reduced by pi/2 in double (exact for |x| < 2^20 quadrants, far beyond the
// RoPE angles of a 1M-token context) with Taylor polynomials on [-pi/4, pi/4].
DS4_HD inline void sincosf(float x, float* s, float* c) {
  const double xd = x;
  const double kd = rint(xd * 0.63661977236758134308);
  double r = xd - kd * 1.57079632673412561417e+00;  // pi/2, first 33 bits: kd * it is exact
  r = r - kd * 6.07710050650619224932e-11;          // the next bits of pi/2
  const double r2 = r * r;
  double ps = -7.6471637318198164759e-13;  // -1/15!
  ps = ps * r2 + 1.6059043836821614599e-10;
  ps = ps * r2 - 2.5052108385441718775e-08;
  ps = ps * r2 + 2.7557319223985890653e-06;
  ps = ps * r2 - 1.9841269841269841270e-04;
  ps = ps * r2 + 8.3333333333333333333e-03;
  ps = ps * r2 - 1.6666666666666666667e-01;
  const double sn = r + r * r2 * ps;
  double pc = 4.7794773323873852974e-14;  // 1/16!
  pc = pc * r2 - 1.1470745597729724714e-11;
  pc = pc * r2 + 2.0876756987868098979e-09;
  pc = pc * r2 - 2.7557319223985890653e-07;
  pc = pc * r2 + 2.4801587301587301587e-05;
  pc = pc * r2 - 1.3888888888888888889e-03;
  pc = pc * r2 + 4.1666666666666666667e-02;
  pc = pc * r2 - 0.5;
  const double cs = 1.0 + r2 * pc;
  const int q = static_cast<int>(static_cast<int64_t>(kd) & 3);
  const double sv = q == 0 ? sn : q == 1 ? cs : q == 2 ? -sn : -cs;
  const double cv = q == 0 ? cs : q == 1 ? -sn : q == 2 ? -cs : sn;
  *s = static_cast<float>(sv);
  *c = static_cast<float>(cv);
}

// Natural log of u > 0 in double: u = m 2^e with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(t).
DS4_HD inline double log_double(double u) {
  uint64_t b;
  memcpy(&b, &u, sizeof b);
  int e = static_cast<int>((b >> 52) & 0x7ff) - 1023;
  double m = bits_to_double((b & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
  if (m > 1.4142135623730950488) {
    m *= 0.5;
    ++e;
  }
  const double t = (m - 1.0) / (m + 1.0), t2 = t * t;
  double p = 1.0 / 23.0;
  for (int k = 21; k >= 1; k -= 2) p = p * t2 + 1.0 / k;
  return e * 0.69314718055994530942 + 2.0 * t * p;
}

// log(1 + y) for y > -1, y finite; computed in double with the (u - 1) correction.
DS4_HD inline float log1pf(float y) {
  const double yd = y;
  const double u = 1.0 + yd;
  if (u == 1.0) return y;
  return static_cast<float>(log_double(u) * (yd / (u - 1.0)));
}

}  // namespace ds4::detmath
