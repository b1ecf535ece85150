// tools/model_io/model_io.h: what the model-file tools (split, splice, quantize) share: checking an
// input model file, telling whether an output names an input, and copying a tensor's bytes in
// pieces released from the input's mapping as they go.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "ds4/status.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/validate.h"

namespace ds4::model_io {

// The check of a main model (or slice) file, or an error naming `path`: an MTP draft file
// ("`tool` works on main model files") or an invalid file (its first problem).
Result<model::FileCheck> check_main_model(const gguf::Reader& file, const std::string& path,
                                          std::string_view tool);

// Whether two paths name one file (both existing).
bool same_file(const std::string& a, const std::string& b);

// Writes tensor `t` of `file` as tensor `index` of `out`, 64 MiB at a time, each piece released
// from the input's mapping once written (a multi-gigabyte tensor is never resident at once).
Status copy_tensor(const gguf::Reader& file, const gguf::TensorInfo& t, gguf::Writer& out,
                   size_t index);

}  // namespace ds4::model_io
