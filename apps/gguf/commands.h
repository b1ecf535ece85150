// apps/gguf/commands.h: the ds4-gguf subcommands. Each returns the process exit code:
// 0 success, 1 the input was bad or an operation failed (one line on stderr), 2 usage error.
#pragma once

#include <string>

namespace ds4::apps::gguf_tool {

struct InfoOptions {
  std::string path;
  int max_array_items = 8;  // arrays longer than this are abbreviated
  bool all_tensors = true;
};

int run_info(const InfoOptions& opts);

}  // namespace ds4::apps::gguf_tool
