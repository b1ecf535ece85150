// tools/synth/hf_export.h: the synthetic F32 weights as a Hugging Face `deepseek_v4` checkpoint
// directory (config.json + safetensors), so `ds4-gguf convert` can be checked against the same
// weights -- and therefore the same reference vectors -- as `ds4-gguf synth --quant f32`.
// Owns: the GGUF -> HF scatter of synthetic values and the config.json of a shape.
// Does not own: the name map (tools/convert/name_map.h) or the value law (synth_values.h).
#pragma once

#include <string>

#include "ds4/status.h"
#include "tools/synth/synth.h"

namespace ds4::synth {

// config.json text for `shape` in the Hugging Face format (semantics-diff.md §D.2 field names,
// rope_scaling as YaRN like the real checkpoint).
std::string hf_config_json(const model::Shape& shape);

// Writes `dir` with the weights synthesize() would write for (opts.shape, f32, opts.seed,
// opts.decisive). Holds
// the whole model in memory: for test shapes.
Status write_hf_checkpoint(const SynthOptions& opts, const std::string& dir);

}  // namespace ds4::synth
