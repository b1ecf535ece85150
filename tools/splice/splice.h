// tools/splice/splice.h: `ds4-gguf splice` -- one whole model file from several files of the same
// shape: slice files joined back (the inverse of `ds4-gguf split`), or a model whose layers come
// partly from another file (the q2 file with its last layers taken from a q4 file's slice: the
// published q2/q4 mix). Issue 53.
// Owns: choosing each tensor's source (the last input that holds it: later inputs replace earlier
// ones), the output's tensor order (the model inventory's, so that a file split and spliced back
// is byte for byte the file it was cut from) and its check before it is kept.
// Does not own: which tensors a slice holds (model/slice_file.h), validation (model/validate.h),
// the container (gguf/writer.h: OUT.partial renamed into place on success).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ds4/status.h"

namespace ds4::splice {

struct SpliceReport {
  size_t tensors = 0;
  uint64_t bytes = 0;        // of the output file
  std::vector<size_t> from;  // tensors taken from each input
};

// Writes the whole model that `inputs` make together: each tensor from the last input that holds
// it, every metadata key of the first input but the slice keys. Errors (no file left at `output`,
// an existing one kept): fewer than two inputs, an input that is not a valid model or slice file
// (or is an MTP draft file), inputs of different shapes, a model tensor no input holds, an output
// that fails the model-file check (say gate and up experts of one layer in different types),
// `output` naming an input; I/O errors.
Status splice_files(const std::vector<std::string>& inputs, const std::string& output,
                    SpliceReport* report = nullptr);

}  // namespace ds4::splice
