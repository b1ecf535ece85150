// src/http/trace.h: the --trace file: one JSON line per finished generation request.
// Owns: the open file and the lock that keeps lines whole when requests finish concurrently.
#pragma once

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "ds4/status.h"
#include "serve/request.h"

namespace ds4::http {

class TraceFile {
 public:
  static Result<std::unique_ptr<TraceFile>> open(const std::string& path);  // truncates
  ~TraceFile();
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  // {"id","endpoint","model","stream","prompt_tokens","cached_tokens","completion_tokens",
  //  "finish","error","rendered","output"}
  void write(const std::string& id, const char* endpoint, const std::string& model, bool stream,
             const std::string& rendered, const serve::Event& done);

 private:
  explicit TraceFile(FILE* f) : f_(f) {}
  std::mutex mu_;
  FILE* f_;
};

}  // namespace ds4::http
