// src/model/fingerprint.h: the identity of the model a GGUF file holds (ModelInfo::fingerprint).
// Owns: how it is computed from a whole model file -- two 64-bit checksums (base/checksum.h,
// distinct seeds) of the file's size and layout and of a few KiB at both ends of 16 tensors spread
// over the file -- and that a slice file (slice_file.h) answers with the whole file's, recorded
// when it was cut, so a slice and its model agree (distributed registration compares them).
// An identity for files that record which model wrote them (agent sessions) and for workers; not
// a defence against a forged file.
#pragma once

#include <string>

#include "gguf/reader.h"

namespace ds4::model {

// 32 lowercase hex digits. Two builds of one shape (other weights, another quantization) differ in
// the sampled bytes; reading them costs a few page faults, not a pass over the file.
std::string model_fingerprint(const gguf::Reader& file);

}  // namespace ds4::model
