// src/base/read_file.cpp: see read_file.h.
#include "base/read_file.h"

#include <fstream>
#include <sstream>

namespace ds4::base {

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found("cannot read '%s'", path.c_str());
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::io_error("reading '%s' failed", path.c_str());
  return ss.str();
}

}  // namespace ds4::base
