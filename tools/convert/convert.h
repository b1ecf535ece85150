// tools/convert/convert.h: DeepSeek V4 safetensors checkpoint -> DwarfStar GGUF (`ds4-gguf
// convert`). Owns: the conversion driver -- config and layout detection, resolving every GGUF
// tensor of
//   model::model_tensors() to its source tensor(s) before anything is written, then streaming one
//   tensor at a time (rows decoded and re-quantised in parallel chunks) into a gguf::Writer.
// Does not own: the tensor inventory and metadata (model/), the name map (name_map.h), number
//   formats (numeric.h, quant/), or command-line parsing (apps/gguf).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ds4/status.h"
#include "model/inventory.h"

namespace ds4::convert {

struct ConvertOptions {
  std::string src_dir;  // checkpoint directory: config.json + *.safetensors (+ index json)
  std::string output;   // GGUF path to write
  model::Recipe recipe = model::Recipe::kQ2;
  std::string
      vocab_gguf;   // optional: copy tokenizer.* keys from this GGUF; else src_dir/tokenizer.json
  int threads = 0;  // 0: one per hardware thread
  bool progress = false;  // one line per tensor on stderr
  // An importance matrix (ds4-gguf imatrix) for the routed experts' encoders; empty: uniform.
  std::string imatrix;
};

struct ConvertReport {
  std::string layout;    // naming: "huggingface", "official" or "transformers-saved"
  std::string shape;     // builtin shape name or "custom"
  size_t n_tensors = 0;  // GGUF tensors written
  size_t n_unused =
      0;  // source tensors (scales included) not read, e.g. mtp.* of the official layout
  uint64_t output_bytes = 0;
  std::vector<std::string> unknown_config_keys;  // config.json keys the reader does not know
};

// Converts a checkpoint to a complete GGUF (metadata from model::shape_metadata + tokenizer keys,
// tensors from model::model_tensors(shape, recipe)). Every source tensor is found and checked
// (name, dtype, shape, scale shape) before the output is created; the GGUF appears at `output`
// only when complete. The multi-token-prediction block (mtp.*) is not converted.
Status convert_checkpoint(const ConvertOptions& opts, ConvertReport* report = nullptr);

// Command wrapper: runs convert_checkpoint, prints a one-line summary to stdout or a one-line error
// to stderr; returns 0 on success, 1 on failure.
int run_convert(const ConvertOptions& opts);

}  // namespace ds4::convert
