// tools/split/split.h: `ds4-gguf split` -- cut a slice file out of a model file (distributed
// inference, features.md §10.1; docs/distributed.md, "Slice files").
// Owns: writing a slice file: every metadata key of the input unchanged, the dwarfstar.slice.*
// keys (model/slice_file.h) recording the layers and the whole model's fingerprint, and exactly
// the tensors a slice of those layers holds (model::range_holds: what the engine binds, and the
// layers' ignored tensors), bytes copied unchanged.
// Does not own: which tensors a range binds or what the keys mean (model/slice_file.h), the
// container (gguf/writer.h, which writes OUT.partial and renames it into place on success).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ds4/engine.h"
#include "ds4/status.h"
#include "model/shape.h"

namespace ds4::split {

struct SplitReport {
  model::LayerRange range;
  size_t tensors = 0;
  uint64_t bytes = 0;  // of the output file
  std::string fingerprint;
};

// Writes the slice `layers` of the model file `input` to `output`. `input` may itself be a slice
// file that holds those layers (the whole model's fingerprint is carried over). Errors:
// kInvalidArgument when the layers are not a range of the model or not in `input`'s slice, or
// `output` names `input`; the input's open or validation errors; I/O errors. On any error no file
// is left at `output` (an existing one is kept) nor at its temporary name.
Status write_slice_file(const std::string& input, const std::string& output,
                        const LayerSlice& layers, SplitReport* report = nullptr);

}  // namespace ds4::split
