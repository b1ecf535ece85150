// apps/gguf/model_cmds.cpp: `ds4-gguf check FILE` and `ds4-gguf synth ...`.
#include <algorithm>
#include <cstdio>
#include <string>

#include "apps/gguf/commands.h"
#include "gguf/reader.h"
#include "model/hparams.h"
#include "model/slice_file.h"
#include "model/validate.h"
#include "tools/synth/hf_export.h"
#include "tools/synth/synth.h"

namespace ds4::apps::gguf_tool {

int run_check(const CheckOptions& opts) {
  auto file = gguf::Reader::open(opts.path);
  if (!file) {
    std::fprintf(stderr, "ds4-gguf check: %s\n", file.status().to_string().c_str());
    return 1;
  }
  const model::FileCheck c = model::check_model_file(*file);
  if (c.shape_known) {
    std::printf("%s: %s shape '%.*s'%s, %zu tensors\n", opts.path.c_str(),
                c.shape.kind == model::ShapeKind::kTest ? "test" : "published",
                int(c.shape.name.size()), c.shape.name.data(), c.mtp ? " (MTP file)" : "",
                file->tensors().size());
  }
  if (c.slice) {
    std::printf("slice file: layers %s of the model %s\n",
                model::range_name(c.slice->range).c_str(), c.slice->fingerprint.c_str());
  }
  for (const std::string& n : c.notes) std::printf("note: %s\n", n.c_str());
  for (const std::string& p : c.problems) std::printf("problem: %s\n", p.c_str());
  if (!c.problems.empty()) {
    std::fprintf(stderr, "ds4-gguf check: %s: %zu problem%s\n", opts.path.c_str(),
                 c.problems.size(), c.problems.size() == 1 ? "" : "s");
    return 1;
  }
  std::printf("ok\n");
  return 0;
}

std::optional<model::Shape> shape_arg(const char* cmd, const std::string& name) {
  auto shape = model::builtin_shape(name);
  if (!shape) {
    std::fprintf(stderr, "ds4-gguf %s: unknown shape '%s' (flash, pro, tiny, small)\n", cmd,
                 name.c_str());
  }
  return shape;
}

std::optional<model::Recipe> recipe_arg(const char* cmd, const std::string& name) {
  const auto recipe = model::recipe_from_name(name);
  if (!recipe) {
    std::fprintf(stderr, "ds4-gguf %s: unknown --quant '%s' (f32, f16, q8, q2, q4)\n", cmd,
                 name.c_str());
  }
  return recipe;
}

int run_synth(const SynthCmdOptions& opts) {
  synth::SynthOptions s;
  const auto shape = shape_arg("synth", opts.shape);
  if (!shape) return 2;
  const auto recipe = recipe_arg("synth", opts.quant);
  if (!recipe) return 2;
  s.shape = *shape;
  // A shape cut to its first layers is no published shape: it carries a test-shape name, which
  // the loader takes as a custom shape of these dimensions.
  const std::string cut_name = opts.shape + "-" + std::to_string(opts.n_layer) + "-layers";
  if (opts.n_layer > 0) {
    if (opts.n_layer > shape->n_layer) {
      std::fprintf(stderr, "ds4-gguf synth: --n-layer %d exceeds the %s shape's %d layers\n",
                   opts.n_layer, opts.shape.c_str(), shape->n_layer);
      return 2;
    }
    if (opts.mtp) {
      std::fprintf(stderr, "ds4-gguf synth: --n-layer writes main models only (no --mtp)\n");
      return 2;
    }
    s.shape.n_layer = opts.n_layer;
    s.shape.n_hash_layer = std::min(s.shape.n_hash_layer, opts.n_layer);
    s.shape.kind = model::ShapeKind::kTest;
    s.shape.name = cut_name;
  }
  s.recipe = *recipe;
  s.seed = opts.seed;
  s.vocab_gguf = opts.vocab;
  s.output = opts.output;
  s.mtp = opts.mtp;
  s.threads = opts.threads;
  s.decisive.routing = opts.decisive_routing || opts.decisive;
  s.decisive.indexer = opts.decisive;
  s.decisive.sampling = opts.decisive;
  s.decisive.branch_shift = opts.branch_shift >= 0
                                ? opts.branch_shift
                                : (opts.decisive ? synth::kDecisiveBranchShift : 0);
  if (opts.output.empty() == opts.hf_dir.empty()) {
    std::fprintf(stderr, "ds4-gguf synth: give exactly one of -o FILE.gguf and --hf-dir DIR\n");
    return 2;
  }
  if (!opts.hf_dir.empty()) {
    if (s.recipe != model::Recipe::kF32 || s.mtp) {
      std::fprintf(stderr,
                   "ds4-gguf synth: --hf-dir writes the f32 main model only (use --quant f32)\n");
      return 2;
    }
    const Status st = synth::write_hf_checkpoint(s, opts.hf_dir);
    if (!st.is_ok()) {
      std::fprintf(stderr, "ds4-gguf synth: %s\n", st.to_string().c_str());
      return 1;
    }
    std::printf("wrote Hugging Face checkpoint %s\n", opts.hf_dir.c_str());
    return 0;
  }
  synth::SynthReport report;
  const Status st = synth::synthesize(s, &report);
  if (!st.is_ok()) {
    std::fprintf(stderr, "ds4-gguf synth: %s\n", st.to_string().c_str());
    return 1;
  }
  std::printf("wrote %s: %zu tensors, %llu bytes in %.1f s (%.0f MB/s)\n", opts.output.c_str(),
              report.tensors, static_cast<unsigned long long>(report.bytes), report.seconds,
              static_cast<double>(report.bytes) / 1e6 / std::max(report.seconds, 1e-9));
  return 0;
}

}  // namespace ds4::apps::gguf_tool
