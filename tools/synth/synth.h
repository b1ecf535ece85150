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
#include "tools/synth/synth_values.h"

namespace ds4::synth {

// The discrete choices the synthetic law makes decisive (docs/synth.md): with all three, engines
// that round differently make the same choices, so they can be compared on a random-weight file.
struct Decisive {
  // Selection biases in tiers kRouterTier apart: every top-k layer's experts are decided by the
  // bias, with a margin wider than the router's whole score range.
  bool routing = false;
  // indexer.proj is zero: every indexer score is exactly 0 and the top-k is the tie rule's (the
  // lowest-indexed visible rows), whatever rounding an engine uses.
  bool indexer = false;
  // output.weight row v = the head's scale times the sum of the embedding rows of v's
  // predecessors (SuccessorMap): after token t the logit of succ(t) stands far above the rest.
  bool sampling = false;
  // The sublayers' output projections (attn_output_b, ffn_down_shexp, ffn_down_exps) scaled by
  // 2^-branch_shift, so the residual stream keeps the token's embedding: the decisive head then
  // sees it (with the default law the sublayers' outputs bury it).
  int branch_shift = 0;
};

// The branch shift --decisive uses (docs/synth.md: measured so the head's choice is decisive).
inline constexpr int kDecisiveBranchShift = 3;

// What generate_rows needs besides the tensor and the seed.
struct LawContext {
  Decisive decisive;
  const SuccessorMap* successors = nullptr;  // required with decisive.sampling
};

struct SynthOptions {
  model::Shape shape = model::kTiny;
  model::Recipe recipe = model::Recipe::kQ2;
  uint64_t seed = 0;
  std::string vocab_gguf;  // tokenizer.* keys are copied from here; its vocabulary must match
  std::string output;
  bool mtp = false;  // write the optional MTP file's tensors instead of the main model's
  int threads = 0;   // 0: one per hardware thread
  Decisive decisive;
};

struct SynthReport {
  uint64_t bytes = 0;
  size_t tensors = 0;
  double seconds = 0;
};

Status synthesize(const SynthOptions& opts, SynthReport* report);

// Fills `out` with the bytes of rows [row_begin, row_end) of `spec` (exposed for tests).
void generate_rows(const model::TensorSpec& spec, const model::Shape& shape, uint64_t seed,
                   uint64_t row_begin, uint64_t row_end, uint8_t* out, const LawContext& law = {});

// The decisive head's token map for `seed`: ordinary tokens are those of token type 1 (normal) in
// the vocabulary GGUF (the published vocabulary: ids 3..127999).
Result<SuccessorMap> successor_map(const std::string& vocab_gguf, int n_vocab, uint64_t seed);

}  // namespace ds4::synth
