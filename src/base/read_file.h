// src/base/read_file.h: a whole file's bytes as a string (the small text and list files the tools
// read: calibration corpora, vector sets, baselines, traces, checkpoint configs).
#pragma once

#include <string>

#include "ds4/status.h"

namespace ds4::base {

// Errors: kNotFound "cannot read 'PATH'" when it cannot be opened; kIoError when reading fails.
Result<std::string> read_file(const std::string& path);

}  // namespace ds4::base
