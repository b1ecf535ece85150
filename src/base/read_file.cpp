// src/base/read_file.cpp: see read_file.h.
#include "base/read_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
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

Status write_file(const std::string& path, const void* bytes, size_t size) {
  const std::string tmp = path + ".partial";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return Status::io_error("cannot create '%s': %s", tmp.c_str(), std::strerror(errno));
  }
  const bool ok = std::fwrite(bytes, 1, size, f) == size;
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return Status::io_error("cannot write '%s': %s", path.c_str(), std::strerror(err));
  }
  return Status::ok();
}

}  // namespace ds4::base
