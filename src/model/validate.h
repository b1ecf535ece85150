// src/model/validate.h: whole-file validation of a model GGUF against its shape -- what
// `ds4-gguf check` prints and what the engine refuses to load.
// Owns: the comparison of a file's tensor directory with the inventory (presence, accepted types,
// exact shapes) on top of the metadata checks of hparams.h. The rules are ds4's loader's (model.md
// §2): what it accepts, the engine accepts; what it reads past (tensors it never binds, optional
// keys of other types) is listed as a note, not a problem. A slice file (slice_file.h) must hold
// the tensors of its recorded layers only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "model/shape.h"
#include "model/slice_file.h"

namespace ds4::model {

struct FileCheck {
  bool shape_known = false;
  Shape shape{};
  bool mtp = false;                   // an MTP file (mtp.0.* tensors)
  std::optional<SliceMark> slice;     // a slice file: the layers it holds (else a whole model)
  std::vector<std::string> problems;  // every problem found; empty = valid
  std::vector<std::string> notes;     // what the engine accepts but ignores (valid either way)
};

FileCheck check_model_file(const gguf::Reader& file);

}  // namespace ds4::model
