// src/base/read_file.h: whole files: read as a string (the small text and list files the tools
// read: calibration corpora, vector sets, baselines, traces, checkpoint configs), and written
// whole or not at all (session snapshots, steering direction files and their metadata).
#pragma once

#include <cstddef>
#include <string>

#include "ds4/status.h"

namespace ds4::base {

// Errors: kNotFound "cannot read 'PATH'" when it cannot be opened; kIoError when reading fails.
Result<std::string> read_file(const std::string& path);

// Writes `bytes` to PATH.partial and renames it to PATH: PATH then holds all of them or is as it
// was (a failed write removes the partial file). Errors: kIoError "cannot create 'PATH.partial':
// REASON" or "cannot write 'PATH': REASON".
Status write_file(const std::string& path, const void* bytes, size_t size);

}  // namespace ds4::base
