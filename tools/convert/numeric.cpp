// tools/convert/numeric.cpp: FP8/FP4/E8M0 decoding and row extraction.
#include "tools/convert/numeric.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "base/check.h"
#include "base/f16.h"

namespace ds4::convert {
namespace {

float load_plain(Dtype d, const uint8_t* p) {
  switch (d) {
    case Dtype::kF64: {
      double v;
      std::memcpy(&v, p, 8);
      return static_cast<float>(v);
    }
    case Dtype::kF32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case Dtype::kF16: return f16_to_f32(static_cast<uint16_t>(p[0] | (p[1] << 8)));
    case Dtype::kBF16: return bf16_to_f32(static_cast<uint16_t>(p[0] | (p[1] << 8)));
    default: return 0.0f;
  }
}

bool is_plain_float(Dtype d) {
  return d == Dtype::kF64 || d == Dtype::kF32 || d == Dtype::kF16 || d == Dtype::kBF16;
}

double scale_at(const TensorView& s, uint64_t index) {
  if (s.dtype == Dtype::kF8E8M0) return e8m0_to_f64(s.data[index]);
  float v;
  std::memcpy(&v, s.data.data() + 4 * index, 4);
  return v;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

float e4m3_to_f32(uint8_t code) {
  const int sign = code >> 7, exp = (code >> 3) & 0xf, mant = code & 0x7;
  if (exp == 0xf && mant == 0x7) return 0.0f;  // NaN code -> 0 (checkpoint convention)
  const float mag = exp == 0
                        ? std::ldexp(static_cast<float>(mant), -9)                // mant/8 * 2^-6
                        : std::ldexp(static_cast<float>(8 + mant), exp - 7 - 3);  // (1+m/8) 2^(e-7)
  return sign ? -mag : mag;
}

float e2m1_to_f32(uint8_t nibble) {
  const int sign = (nibble >> 3) & 1, exp = (nibble >> 1) & 3, mant = nibble & 1;
  const float mag = exp == 0 ? 0.5f * static_cast<float>(mant)
                             : std::ldexp(1.0f + 0.5f * static_cast<float>(mant), exp - 1);
  return sign ? -mag : mag;
}

double e8m0_to_f64(uint8_t code) {
  if (code == 0xff) return std::numeric_limits<double>::quiet_NaN();
  return std::ldexp(1.0, static_cast<int>(code) - 127);
}

Result<SourceMatrix> describe_source(const TensorView& w, const TensorView* scale) {
  SourceMatrix m;
  m.weight = &w;
  const char* n = w.name.c_str();
  if (is_plain_float(w.dtype)) {
    if (scale != nullptr)
      return Status::invalid_model("tensor '%s' is %s but has a scale tensor", n,
                                   std::string(to_string(w.dtype)).c_str());
    m.cols = w.shape.empty() ? 1 : w.shape.back();
    m.rows = m.cols == 0 ? 0 : static_cast<int64_t>(w.n_elements() / static_cast<uint64_t>(m.cols));
    return m;
  }
  const bool fp8 = w.dtype == Dtype::kF8E4M3;
  const bool fp4 = w.dtype == Dtype::kI8 || w.dtype == Dtype::kU8;
  if (!fp8 && !fp4)
    return Status::invalid_model("tensor '%s' has dtype %s, which is not a float weight format", n,
                                 std::string(to_string(w.dtype)).c_str());
  if (scale == nullptr)
    return Status::invalid_model("%s tensor '%s' has no scale companion", fp8 ? "FP8" : "FP4", n);
  if (scale->dtype != Dtype::kF8E8M0 && scale->dtype != Dtype::kF32)
    return Status::invalid_model("scale '%s' has dtype %s (expected F8_E8M0 or F32)",
                                 scale->name.c_str(), std::string(to_string(scale->dtype)).c_str());
  if (w.shape.size() != 2 || scale->shape.size() != 2)
    return Status::invalid_model("quantised tensor '%s' %s and its scale %s must be 2-D", n,
                                 shape_str(w.shape).c_str(), shape_str(scale->shape).c_str());
  m.scale = scale;
  m.rows = w.shape[0];
  if (fp8) {
    m.kind = SourceMatrix::Kind::kFp8Block;
    m.cols = w.shape[1];
    const int64_t br = (m.rows + kFp8BlockSize - 1) / kFp8BlockSize,
                  bc = (m.cols + kFp8BlockSize - 1) / kFp8BlockSize;
    if (scale->shape[0] != br || scale->shape[1] != bc)
      return Status::invalid_model("FP8 tensor '%s' %s needs a [%lld,%lld] block scale, '%s' is %s",
                                   n, shape_str(w.shape).c_str(), static_cast<long long>(br),
                                   static_cast<long long>(bc), scale->name.c_str(),
                                   shape_str(scale->shape).c_str());
  } else {
    m.kind = SourceMatrix::Kind::kFp4Group;
    m.cols = 2 * w.shape[1];
    if (m.cols % kFp4GroupSize != 0 || scale->shape[0] != m.rows ||
        scale->shape[1] != m.cols / kFp4GroupSize)
      return Status::invalid_model(
          "FP4 tensor '%s' %s (%lld unpacked columns) needs a [%lld,%lld] scale, '%s' is %s", n,
          shape_str(w.shape).c_str(), static_cast<long long>(m.cols),
          static_cast<long long>(m.rows), static_cast<long long>(m.cols / kFp4GroupSize),
          scale->name.c_str(), shape_str(scale->shape).c_str());
  }
  return m;
}

Status decode_rows(const SourceMatrix& m, int64_t row0, int64_t n_rows, float* out) {
  DS4_CHECK(row0 >= 0 && n_rows >= 0 && row0 + n_rows <= m.rows);
  const TensorView& w = *m.weight;
  const uint64_t cols = static_cast<uint64_t>(m.cols);
  switch (m.kind) {
    case SourceMatrix::Kind::kPlain: {
      const uint32_t eb = dtype_bytes(w.dtype);
      const uint8_t* p = w.data.data() + static_cast<uint64_t>(row0) * cols * eb;
      const uint64_t n = static_cast<uint64_t>(n_rows) * cols;
      for (uint64_t i = 0; i < n; ++i) out[i] = load_plain(w.dtype, p + i * eb);
      return Status::ok();
    }
    case SourceMatrix::Kind::kFp8Block: {
      const uint64_t bc = static_cast<uint64_t>(m.scale->shape[1]);
      for (int64_t r = row0; r < row0 + n_rows; ++r) {
        const uint8_t* p = w.data.data() + static_cast<uint64_t>(r) * cols;
        float* o = out + static_cast<uint64_t>(r - row0) * cols;
        const uint64_t srow = static_cast<uint64_t>(r / kFp8BlockSize) * bc;
        for (uint64_t c0 = 0; c0 < cols; c0 += kFp8BlockSize) {
          const double s = scale_at(*m.scale, srow + c0 / kFp8BlockSize);
          if (std::isnan(s))
            return Status::invalid_model("NaN scale in '%s' (row %lld)", m.scale->name.c_str(),
                                         static_cast<long long>(r));
          const uint64_t c1 = std::min<uint64_t>(cols, c0 + kFp8BlockSize);
          for (uint64_t c = c0; c < c1; ++c)
            o[c] = static_cast<float>(static_cast<double>(e4m3_to_f32(p[c])) * s);
        }
      }
      return Status::ok();
    }
    case SourceMatrix::Kind::kFp4Group: {
      const uint64_t groups = cols / kFp4GroupSize;
      for (int64_t r = row0; r < row0 + n_rows; ++r) {
        const uint8_t* p = w.data.data() + static_cast<uint64_t>(r) * (cols / 2);
        float* o = out + static_cast<uint64_t>(r - row0) * cols;
        for (uint64_t g = 0; g < groups; ++g) {
          const double s = scale_at(*m.scale, static_cast<uint64_t>(r) * groups + g);
          if (std::isnan(s))
            return Status::invalid_model("NaN scale in '%s' (row %lld)", m.scale->name.c_str(),
                                         static_cast<long long>(r));
          for (uint64_t c = g * kFp4GroupSize; c < (g + 1) * kFp4GroupSize; c += 2) {
            const uint8_t b = p[c / 2];
            o[c] = static_cast<float>(static_cast<double>(e2m1_to_f32(b & 0xf)) * s);
            o[c + 1] = static_cast<float>(static_cast<double>(e2m1_to_f32(b >> 4)) * s);
          }
        }
      }
      return Status::ok();
    }
  }
  return Status::internal("unknown source kind");
}

}  // namespace ds4::convert
