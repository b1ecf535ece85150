// src/model/slice_file.h: layer slices of a model file (distributed inference, features.md
// §10.1-10.2; docs/distributed.md, "Slice files").
// Owns: the `--layers A:B|A:output` syntax and its resolution against a shape; which tensors a
// layer range binds (the embedding when it starts at layer 0, its layers' tensors, the head when
// it has it); and the dwarfstar.slice.* metadata keys that make a GGUF a slice file: the layers it
// holds and the fingerprint of the whole model file it was cut from.
// Does not own: writing slice files (tools/split), the binding itself (weights.cpp, which binds
// exactly what range_binds() names), or the fingerprint's computation (fingerprint.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ds4/engine.h"
#include "ds4/status.h"
#include "gguf/reader.h"
#include "gguf/value.h"
#include "model/inventory.h"
#include "model/shape.h"

namespace ds4::model {

// The slice keys. All four are present in a slice file and absent from a whole model file.
inline constexpr std::string_view kSliceFirstKey = "dwarfstar.slice.layer_first";  // u32
inline constexpr std::string_view kSliceLastKey = "dwarfstar.slice.layer_last";    // u32
inline constexpr std::string_view kSliceOutputKey = "dwarfstar.slice.output";      // bool
// The whole model file's ModelInfo::fingerprint (32 lowercase hex digits), so that a slice file
// and the file it was cut from name the same model.
inline constexpr std::string_view kSliceFingerprintKey = "dwarfstar.slice.fingerprint";
inline constexpr std::string_view kSliceKeyPrefix = "dwarfstar.slice.";

// The --layers syntax: ds4::parse_layer_slice (ds4/engine.h), defined in slice_file.cpp.
using ds4::parse_layer_slice;

// A LayerSlice (EngineOptions::layers) against the shape's layer count: within 0..n_layer-1,
// first <= last, and the head only after the last layer. Errors are kInvalidArgument.
Result<LayerRange> resolve_layer_slice(const LayerSlice& slice, const Shape& shape);

// "A:B", or "A:output" when the range ends with the head.
std::string range_name(const LayerRange& r);
// Whether every layer and tensor of `inner` is in `outer`.
bool range_contains(const LayerRange& outer, const LayerRange& inner);
// Whether a range binds the inventory tensor `spec`: the embedding when the range starts at layer
// 0, the tensors of its layers (but an ignored one: a hash layer's selection bias), the output
// head and its norms when it has the head.
bool range_binds(const LayerRange& r, const TensorSpec& spec);
// Whether a slice file of the range holds `spec`: what the range binds, and its layers' ignored
// tensors too (the engine skips them; kept so that slices splice back into their file byte for
// byte, tools/splice).
bool range_holds(const LayerRange& r, const TensorSpec& spec);

// What a slice file records about itself.
struct SliceMark {
  LayerRange range;
  std::string fingerprint;  // the whole model file's
};

// The slice a file holds: nullopt for a file without dwarfstar.slice.* keys (a whole model); an
// error naming the key when a key is missing or of the wrong type, the fingerprint is not 32 hex
// digits, or the range is not one of `shape`'s.
Result<std::optional<SliceMark>> read_slice_mark(const gguf::Reader& file, const Shape& shape);

// The keys that record `mark`, in the order a slice file carries them.
std::vector<std::pair<std::string, gguf::Value>> slice_metadata(const SliceMark& mark);

}  // namespace ds4::model
