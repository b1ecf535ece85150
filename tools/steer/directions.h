// tools/steer/directions.h: `ds4-steer build` (features.md §8.3) -- a directional steering file
// from two prompt sets: each prompt's output of one sublayer (attention or FFN) at its last token
// in every layer, captured through an engine observer, and per layer the normalised difference of
// the target set's mean from the contrast set's.
// Owns: reading the prompt files, the capture, the direction arithmetic, writing the .f32 file
// and its JSON metadata.
// Does not own: applying directions (the engine, EngineOptions::steering_file).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ds4/engine.h"
#include "ds4/observer.h"
#include "ds4/status.h"

namespace ds4::steer {

struct BuildOptions {
  std::string model;
  std::string good_file;  // target prompts: one per non-empty line not starting with '#'
  std::string bad_file;   // contrast prompts (the two lists are cut to the shorter one's length)
  std::string output;     // OUT.f32; the metadata goes to OUT.json (OUT without .f32 + .json)
  Sublayer component = Sublayer::kFfn;
  int ctx = 512;  // tokens of context per prompt (a longer prompt is refused)
  std::string system = "You are a helpful assistant.";
  bool think = false;           // capture after "<think>" (thinking) instead of "</think>"
  bool pair_normalize = false;  // mean of the normalised pair differences
  bool orthogonalize = true;    // remove the part along the contrast set's mean direction
  int threads = 0;
  BackendKind backend = BackendKind::kCpu;
  bool progress = false;
};

struct BuildReport {
  int pairs = 0;
  int n_layer = 0;
  int64_t n_embd = 0;
  std::string metadata_path;
};

// A prompt file's prompts. Errors: unreadable, or no prompt in it.
Result<std::vector<std::string>> read_prompts(const std::string& path);

// Per layer, from the captured rows (good[i] and bad[i]: prompt i's n_layer x n_embd rows): d =
// mean(good) - mean(bad), or with pair_normalize the mean of normalise(good[i] - bad[i]); with
// orthogonalize, d loses its part along normalise(mean(bad)); then d is normalised. A layer whose
// difference is zero stays zero. good and bad have the same number of prompts (at least one).
std::vector<float> directions(const std::vector<std::vector<float>>& good,
                              const std::vector<std::vector<float>>& bad, int n_layer,
                              int64_t n_embd, bool pair_normalize, bool orthogonalize);

// Runs the model (o.backend) over both prompt sets and writes the direction file and metadata.
Status build(const BuildOptions& o, BuildReport* report = nullptr);

}  // namespace ds4::steer
