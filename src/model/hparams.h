// src/model/hparams.h: the GGUF metadata of a DeepSeek V4 model file (model.md §2.2).
// Owns: writing a shape's metadata keys, reading a shape back from them, and validating a file's
// metadata -- exactly against the published constants for Flash/Pro files, structurally for test
// shapes. Reports every problem, not only the first.
// Does not own: tensors (inventory.h) or tokenizer keys (tokenizer/).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ds4/status.h"
#include "gguf/reader.h"
#include "gguf/value.h"
#include "model/shape.h"

namespace ds4::model {

// Key naming a test shape. Published Flash/Pro files do not carry it; a file whose dimensions are
// neither Flash's nor Pro's must, so a test model can never be mistaken for a broken real one.
inline constexpr std::string_view kShapeNameKey = "dwarfstar.shape";

std::vector<std::pair<std::string, gguf::Value>> shape_metadata(const Shape& shape);

// Reconstructs the shape from the deepseek4.* keys and classifies it (Flash, Pro or test).
Result<Shape> shape_from_metadata(const gguf::Reader& file);

struct MetadataCheck {
  std::vector<std::string> problems;  // the file is refused when not empty
  std::vector<std::string> notes;     // accepted but ignored: optional keys of types not read
};

// Checks `file`'s metadata for `shape` by ds4's loader rules (model.md §2.2): every problem
// (missing required keys, wrong GGUF types, wrong values) and every ignored optional key.
// Flash/Pro must match the published constants; test shapes must be self-consistent and keep the
// fixed constants (RoPE, YaRN, epsilons, clamp).
MetadataCheck check_metadata(const gguf::Reader& file, const Shape& shape);

}  // namespace ds4::model
