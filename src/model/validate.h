// src/model/validate.h: whole-file validation of a model GGUF against its shape -- what
// `ds4-gguf check` prints and what the engine refuses to load.
// Owns: the comparison of a file's tensor directory with the inventory (presence, accepted types,
// exact shapes, nothing unexpected) on top of the metadata checks of hparams.h.
#pragma once

#include <string>
#include <vector>

#include "gguf/reader.h"
#include "model/shape.h"

namespace ds4::model {

struct FileCheck {
  bool shape_known = false;
  Shape shape{};
  bool mtp = false;                   // an MTP file (mtp.0.* tensors)
  std::vector<std::string> problems;  // every problem found; empty = valid
};

FileCheck check_model_file(const gguf::Reader& file);

}  // namespace ds4::model
