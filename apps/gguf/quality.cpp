// apps/gguf/quality.cpp: `ds4-gguf quality MODEL.gguf --vectors FILE.vec [--csv OUT.csv]` and
// `... --record OUT.vec [--steps N] [--top N]` (tools/quality/score.h; docs/quantize.md).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/gguf/commands.h"
#include "base/read_file.h"
#include "gguf/reader.h"
#include "tools/quality/score.h"

namespace ds4::apps::gguf_tool {
namespace {

namespace fs = std::filesystem;

// A case's prompt file: as written (absolute, or relative to the vector file's folder), else the
// file of that name in the folder's prompts/ (the official set names its files by another
// repository's paths).
Result<std::string> prompt_of(const fs::path& vec_dir, const std::string& name) {
  const fs::path as_given = fs::path(name).is_absolute() ? fs::path(name) : vec_dir / name;
  if (fs::exists(as_given)) return base::read_file(as_given.string());
  const fs::path beside = vec_dir / "prompts" / fs::path(name).filename();
  if (fs::exists(beside)) return base::read_file(beside.string());
  return Status::not_found("prompt file '%s' is not at %s nor %s", name.c_str(),
                           as_given.string().c_str(), beside.string().c_str());
}

int fail(const Status& st) {
  std::fprintf(stderr, "ds4-gguf quality: %s\n", st.to_string().c_str());
  return st.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace

int run_quality(const QualityCmdOptions& opts) {
  auto text = base::read_file(opts.vectors);
  if (!text.is_ok()) return fail(text.status());
  auto cases = quality::parse_vectors(*text);
  if (!cases.is_ok()) return fail(cases.status().with_context(opts.vectors));
  auto tok = Tokenizer::open(opts.model);
  if (!tok.is_ok()) return fail(tok.status());
  EngineOptions eo;
  eo.model_path = opts.model;
  eo.threads = opts.threads;
  auto engine = Engine::open(eo);
  if (!engine.is_ok()) return fail(engine.status());
  const fs::path vec_dir = fs::path(opts.vectors).parent_path();
  bool synthetic = false;
  if (auto file = gguf::Reader::open(opts.model); file.is_ok()) {
    synthetic = file->find("dwarfstar.synthetic_seed") != nullptr;
  }

  if (!opts.record.empty()) {
    std::vector<quality::VectorCase> out;
    for (const quality::VectorCase& c : *cases) {
      auto prompt = prompt_of(vec_dir, c.prompt_file);
      if (!prompt.is_ok()) return fail(prompt.status());
      const int steps =
          opts.steps > 0 ? opts.steps : (c.steps.empty() ? 16 : static_cast<int>(c.steps.size()));
      auto rec = quality::record_case(**engine, *tok, c, *prompt, steps, opts.top);
      if (!rec.is_ok()) return fail(rec.status());
      out.push_back(std::move(*rec));
    }
    std::ofstream f(opts.record, std::ios::binary);
    f << quality::write_vectors(out);
    if (!f.flush()) return fail(Status::io_error("cannot write '%s'", opts.record.c_str()));
    std::printf("wrote %s: %zu cases of %s's own greedy continuations\n", opts.record.c_str(),
                out.size(), opts.model.c_str());
    return 0;
  }

  const quality::TokenIndex index(*tok);
  std::string csv = "case,steps,log_likelihood,mean_log_likelihood,top1,kl_mean,kl_max\n";
  std::printf("%-28s %6s %14s %10s %8s %12s %12s\n", "case", "steps", "log-lik", "per token",
              "top-1", "KL mean", "KL max");
  quality::CaseScore total{.id = "all"};
  char line[256];
  const auto row = [&](const quality::CaseScore& s) {
    const double n = s.steps > 0 ? s.steps : 1;
    std::printf("%-28s %6d %14.4f %10.4f %7.1f%% %12.6f %12.6f\n", s.id.c_str(), s.steps,
                s.log_likelihood, s.log_likelihood / n, 100.0 * s.top1 / n, s.kl_sum / n, s.kl_max);
    std::snprintf(line, sizeof line, "%s,%d,%.9g,%.9g,%d,%.9g,%.9g\n", s.id.c_str(), s.steps,
                  s.log_likelihood, s.log_likelihood / n, s.top1, s.kl_sum / n, s.kl_max);
    csv += line;
  };
  for (const quality::VectorCase& c : *cases) {
    auto prompt = prompt_of(vec_dir, c.prompt_file);
    if (!prompt.is_ok()) return fail(prompt.status());
    auto s = quality::score_case(**engine, *tok, index, c, *prompt);
    if (!s.is_ok()) return fail(s.status());
    row(*s);
    total.steps += s->steps;
    total.log_likelihood += s->log_likelihood;
    total.top1 += s->top1;
    total.kl_sum += s->kl_sum;
    total.kl_max = std::max(total.kl_max, s->kl_max);
  }
  row(total);
  if (synthetic) {
    std::printf(
        "note: %s has synthetic (random) weights: these figures check the mechanism only, they "
        "say nothing of a quantization's quality\n",
        opts.model.c_str());
  }
  if (!opts.csv.empty()) {
    std::ofstream f(opts.csv, std::ios::binary);
    f << csv;
    if (!f.flush()) return fail(Status::io_error("cannot write '%s'", opts.csv.c_str()));
  }
  return 0;
}

}  // namespace ds4::apps::gguf_tool
