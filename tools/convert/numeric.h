// tools/convert/numeric.h: decoding of checkpoint number formats to float32 (semantics-diff.md
// B.2): plain floats (F64/F32/F16/BF16), FP8 e4m3 weights with one E8M0 (or F32) scale per
// 128x128 block, and FP4 e2m1 weights packed two per byte with one scale per 32 input columns.
// Owns: the format tables and the validation of a weight/scale pair's shapes.
// Does not own: tensor lookup (safetensors.h) or re-quantisation (quant/quantize.h).
#pragma once

#include <cstdint>

#include "ds4/status.h"
#include "tools/convert/safetensors.h"

namespace ds4::convert {

inline constexpr int64_t kFp8BlockSize = 128;  // FP8 scale block: 128 output x 128 input
inline constexpr int64_t kFp4GroupSize = 32;   // FP4 scale group: 1 output x 32 input

// e4m3 (the "FN" variant: no infinities). Codes 0x7f and 0xff are NaN; the checkpoint convention
// maps them to 0 (B.2), which this function does.
float e4m3_to_f32(uint8_t code);
// e2m1: bit 3 sign, bits 2..1 exponent (bias 1), bit 0 mantissa: {0, .5, 1, 1.5, 2, 3, 4, 6}.
float e2m1_to_f32(uint8_t nibble);
// E8M0 scale 2^(code - 127); code 0xff is NaN and returns a NaN.
double e8m0_to_f64(uint8_t code);

// A source tensor seen as a float matrix: every dimension but the last flattened into rows.
struct SourceMatrix {
  enum class Kind { kPlain, kFp8Block, kFp4Group };
  Kind kind = Kind::kPlain;
  const TensorView* weight = nullptr;
  const TensorView* scale = nullptr;  // FP8/FP4 only
  int64_t rows = 0;
  int64_t cols = 0;  // logical (unpacked) columns
};

// Checks dtypes and the weight/scale shapes; `scale` may be null for plain float weights. FP8
// needs a 2-D weight [R, C] and a scale [ceil(R/128), ceil(C/128)]; FP4 (dtype I8 or U8) a 2-D
// weight [R, C/2] and a scale [R, C/32]. Scales are F8_E8M0 or F32.
Result<SourceMatrix> describe_source(const TensorView& weight, const TensorView* scale);

// Decodes rows [row0, row0 + n_rows) into out (n_rows x cols floats). Fails on a NaN E8M0 scale.
Status decode_rows(const SourceMatrix& m, int64_t row0, int64_t n_rows, float* out);

}  // namespace ds4::convert
