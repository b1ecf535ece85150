// apps/gguf/splice.cpp: `ds4-gguf splice FILE... -o OUT.gguf` (tools/splice/splice.h;
// docs/quantize.md, "Splice").
#include "tools/splice/splice.h"

#include <cstdio>

#include "apps/gguf/commands.h"

namespace ds4::apps::gguf_tool {

int run_splice(const SpliceCmdOptions& opts) {
  splice::SpliceReport report;
  const Status st = splice::splice_files(opts.inputs, opts.output, &report);
  if (!st.is_ok()) {
    std::fprintf(stderr, "ds4-gguf splice: %s\n", st.to_string().c_str());
    return st.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  std::printf("wrote %s: %zu tensors (", opts.output.c_str(), report.tensors);
  for (size_t i = 0; i < report.from.size(); ++i) {
    std::printf("%s%zu from %s", i > 0 ? ", " : "", report.from[i], opts.inputs[i].c_str());
  }
  std::printf("), %llu bytes\n", static_cast<unsigned long long>(report.bytes));
  return 0;
}

}  // namespace ds4::apps::gguf_tool
