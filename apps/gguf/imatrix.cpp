// apps/gguf/imatrix.cpp: `ds4-gguf imatrix MODEL.gguf --text FILE... | --chat FILE.jsonl... -o OUT`
// and `ds4-gguf imatrix --merge A.gguf B.gguf... -o OUT` (tools/imatrix; docs/quantize.md).
#include "tools/imatrix/imatrix.h"

#include <cstdio>

#include "apps/gguf/commands.h"
#include "tools/imatrix/calibrate.h"

namespace ds4::apps::gguf_tool {
namespace {

int fail(const Status& st) {
  std::fprintf(stderr, "ds4-gguf imatrix: %s\n", st.to_string().c_str());
  return st.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace

int run_imatrix(const ImatrixCmdOptions& opts) {
  if (!opts.merge.empty()) {
    if (!opts.model.empty() || !opts.text.empty() || !opts.chat.empty() || opts.merge.size() < 2) {
      return fail(Status::invalid_argument(
          "--merge takes two importance matrices or more, and no model or corpus"));
    }
    auto sum = imatrix::read_imatrix(opts.merge[0]);
    if (!sum.is_ok()) return fail(sum.status());
    for (size_t i = 1; i < opts.merge.size(); ++i) {
      auto next = imatrix::read_imatrix(opts.merge[i]);
      if (!next.is_ok()) return fail(next.status());
      if (Status st = imatrix::merge(*sum, *next); !st.is_ok()) return fail(st);
    }
    if (Status st = imatrix::write_imatrix(*sum, opts.output); !st.is_ok()) return fail(st);
    std::printf("wrote %s: %zu importance matrices merged, %llu chunks\n", opts.output.c_str(),
                opts.merge.size(), static_cast<unsigned long long>(sum->chunks));
    return 0;
  }
  if (opts.model.empty()) return fail(Status::invalid_argument("a model file is required"));
  imatrix::CalibrateReport report;
  const Status st = imatrix::calibrate(
      {.model = opts.model,
       .text_files = opts.text,
       .chat_files = opts.chat,
       .output = opts.output,
       .chunk_tokens = opts.chunk,
       .save_every = opts.save_every,
       .max_chunks = opts.max_chunks,
       .threads = opts.threads,
       .backend = opts.backend == "cuda" ? BackendKind::kCuda : BackendKind::kCpu,
       .progress = opts.progress},
      &report);
  if (!st.is_ok()) return fail(st);
  std::printf(
      "wrote %s: %llu of %llu chunks (%llu resumed), %llu tokens in %.1f s (%.1f tokens/s)\n",
      opts.output.c_str(), static_cast<unsigned long long>(report.chunks_done),
      static_cast<unsigned long long>(report.chunks_total),
      static_cast<unsigned long long>(report.chunks_resumed),
      static_cast<unsigned long long>(report.tokens), report.seconds,
      report.seconds > 0 ? static_cast<double>(report.tokens) / report.seconds : 0.0);
  return 0;
}

}  // namespace ds4::apps::gguf_tool
