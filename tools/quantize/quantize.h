// tools/quantize/quantize.h: `ds4-gguf quantize` -- a model file whose routed experts are float
// (F32, F16 or BF16: a synthesized or converted f32/f16 file) re-encoded to a published recipe:
// q2 (IQ2_XXS gate and up, Q2_K down), q4 (Q4_K), or q2 with the last N layers at q4. Every other
// tensor and every metadata key are copied unchanged (issue 53).
// Owns: choosing each expert tensor's type, and streaming the conversion one expert matrix at a
// time (memory bounded by a few matrices whatever the file's size), its rows quantized in
// parallel. Does not own: the encoders (quant/quantize.h), the recipes' types (model/inventory.h),
// the container (gguf/writer.h: OUT.partial renamed into place on success).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ds4/status.h"
#include "model/inventory.h"

namespace ds4::quantize {

struct QuantizeOptions {
  std::string input;                          // model GGUF with float routed experts
  std::string output;                         // GGUF to write
  model::Recipe recipe = model::Recipe::kQ2;  // kQ2, kQ4 or kQ8 (the experts' types)
  int q4_last = 0;  // with kQ2: the last q4_last layers' experts take the q4 recipe's types
  // An importance matrix (ds4-gguf imatrix): each expert's column errors weighed by what reached
  // them. Empty: uniform weights.
  std::string imatrix;
  int threads = 0;        // 0: one per hardware thread
  bool progress = false;  // a line per expert tensor on stderr
};

struct QuantizeReport {
  size_t tensors = 0;    // written
  size_t quantized = 0;  // of which routed experts re-encoded
  uint64_t bytes = 0;    // of the output file
};

// Writes the quantized copy. Errors (no file left at `output`, an existing one kept): an input
// that is not a valid model file (or is an MTP draft file), routed experts that are already
// quantized, a recipe other than q2 / q4 / q8, q4_last outside [0, n_layer] or with a recipe other
// than q2, an importance matrix of another shape, `output` naming the input; I/O errors.
Status quantize_model(const QuantizeOptions& opts, QuantizeReport* report = nullptr);

}  // namespace ds4::quantize
