// apps/gguf/quantize.cpp: `ds4-gguf quantize [--quant q2|q4|q8] [--q4-last N] -o OUT.gguf IN.gguf`
// (tools/quantize/quantize.h; docs/gguf.md).
#include "tools/quantize/quantize.h"

#include <cstdio>

#include "apps/gguf/commands.h"

namespace ds4::apps::gguf_tool {

int run_quantize(const QuantizeCmdOptions& opts) {
  const auto recipe = recipe_arg("quantize", opts.quant);
  if (!recipe) return 2;
  quantize::QuantizeReport report;
  const Status st = quantize::quantize_model({.input = opts.input,
                                              .output = opts.output,
                                              .recipe = *recipe,
                                              .q4_last = opts.q4_last,
                                              .imatrix = opts.imatrix,
                                              .threads = opts.threads,
                                              .progress = opts.progress},
                                             &report);
  if (!st.is_ok()) {
    std::fprintf(stderr, "ds4-gguf quantize: %s\n", st.to_string().c_str());
    return st.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  std::printf(
      "wrote %s: %zu tensors, %zu routed expert tensors quantized (%s%s), %llu bytes\n",
      opts.output.c_str(), report.tensors, report.quantized, opts.quant.c_str(),
      opts.q4_last > 0 ? (", last " + std::to_string(opts.q4_last) + " layers q4").c_str() : "",
      static_cast<unsigned long long>(report.bytes));
  return 0;
}

}  // namespace ds4::apps::gguf_tool
