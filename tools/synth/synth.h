// tools/synth/synth.h: `ds4-gguf synth` -- random-weight model files in the exact published layout.
// Owns: turning the inventory into a streamed GGUF (metadata, tokenizer keys copied from a
// vocabulary GGUF, every tensor generated chunk by chunk on all threads).
// Does not own: the value laws (synth_values.h) or the inventory (model/inventory.h).
#pragma once

#include <cstdint>
#include <string>

#include "ds4/status.h"
#include "model/inventory.h"
#include "model/shape.h"

namespace ds4::synth {

struct SynthOptions {
  model::Shape shape = model::kTiny;
  model::Recipe recipe = model::Recipe::kQ2;
  uint64_t seed = 0;
  std::string vocab_gguf;  // tokenizer.* keys are copied from here; its vocabulary must match
  std::string output;
  bool mtp = false;  // write the optional MTP file's tensors instead of the main model's
  int threads = 0;   // 0: one per hardware thread
  // Selection biases in tiers kRouterTier apart (synth_values.h), so every top-k layer's choice
  // of experts is decided by the bias with a wide margin: engines that round differently still
  // pick the same experts, which makes them comparable on a random-weight file.
  bool decisive_routing = false;
};

struct SynthReport {
  uint64_t bytes = 0;
  size_t tensors = 0;
  double seconds = 0;
};

Status synthesize(const SynthOptions& opts, SynthReport* report);

// Fills `out` with the bytes of rows [row_begin, row_end) of `spec` (exposed for tests).
void generate_rows(const model::TensorSpec& spec, const model::Shape& shape, uint64_t seed,
                   uint64_t row_begin, uint64_t row_end, uint8_t* out,
                   bool decisive_routing = false);

}  // namespace ds4::synth
