// apps/gguf/split.cpp: `ds4-gguf split --layers A:B|A:output -o OUT.gguf IN.gguf`, a slice file
// for one process of a distributed run (tools/split/split.h; docs/distributed.md, "Slice files").
#include "tools/split/split.h"

#include <cstdio>

#include "apps/gguf/commands.h"
#include "model/slice_file.h"

namespace ds4::apps::gguf_tool {

int run_split(const SplitCmdOptions& opts) {
  const auto layers = model::parse_layer_slice(opts.layers);
  if (!layers.is_ok()) {
    std::fprintf(stderr, "ds4-gguf split: --%s\n", layers.status().message().c_str());
    return 2;
  }
  split::SplitReport report;
  const Status st = split::write_slice_file(opts.input, opts.output, *layers, &report);
  if (!st.is_ok()) {
    std::fprintf(stderr, "ds4-gguf split: %s\n", st.to_string().c_str());
    // A range the model or the input slice file does not have is a usage error, like bad syntax.
    return st.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  std::printf("wrote %s: layers %s, %zu tensors, %llu bytes (model %s)\n", opts.output.c_str(),
              model::range_name(report.range).c_str(), report.tensors,
              static_cast<unsigned long long>(report.bytes), report.fingerprint.c_str());
  return 0;
}

}  // namespace ds4::apps::gguf_tool
