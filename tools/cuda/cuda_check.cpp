// tools/cuda/cuda_check.cpp: `ds4-cuda-check MODELS_DIR REF_DIR [LONG_TOKENS]` -- the CUDA
// backend's evidence on the GPU machine (which has no GoogleTest): (1) the Hugging Face reference
// gates of tests/model on CUDA, (2) CUDA against the CPU reference on the quantized recipes,
// (3) a long-context run against the CPU backend. Prints a table; exit status 1 on any failure.
// The CUDA backend runs in both of its modes: the default, which must match the CPU bit for bit,
// and fast prefill (DS4_CUDA_FAST_PREFILL=1), which must pass the Hugging Face gates; its distance
// from the CPU on the quantized recipes is printed as information (no gate: the recipes' FP8 and
// int8 simulation turns last-bit differences into code flips, bench/h200.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ds4/engine.h"

namespace {

using ds4::TokenId;

// Sets DS4_CUDA_FAST_PREFILL for the CUDA engines opened in its scope (the backend reads it when
// it is created), then unsets it.
struct CudaMode {
  explicit CudaMode(bool exact) { setenv("DS4_CUDA_FAST_PREFILL", exact ? "0" : "1", 1); }
  ~CudaMode() { unsetenv("DS4_CUDA_FAST_PREFILL"); }
  CudaMode(const CudaMode&) = delete;
  CudaMode& operator=(const CudaMode&) = delete;
  static const char* name(bool exact) { return exact ? "default" : "fast"; }
};

class Checker {
 public:
  int failures = 0;

  void verdict(bool ok, const char* what, const std::string& detail) {
    std::printf("%-4s %-58s %s\n", ok ? "ok" : "FAIL", what, detail.c_str());
    if (!ok) ++failures;
  }

  std::unique_ptr<ds4::Engine> open(const std::string& path, ds4::BackendKind kind, bool hf) {
    ds4::EngineOptions o;
    o.model_path = path;
    o.backend = kind;
    o.qat_simulation = !hf;
    o.f16_kv_rows = !hf;
    auto e = ds4::Engine::open(o);
    if (!e.is_ok()) {
      std::printf("FAIL open %s: %s\n", path.c_str(), e.status().message().c_str());
      ++failures;
      return nullptr;
    }
    return std::move(e).value();
  }

  static double rel_l2(const float* a, const float* b, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; ++i) {
      num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
      den += double(b[i]) * b[i];
    }
    return std::sqrt(num / den);
  }

  static TokenId argmax(std::span<const float> v) {
    size_t b = 0;
    for (size_t i = 1; i < v.size(); ++i) b = v[i] > v[b] ? i : b;
    return static_cast<TokenId>(b);
  }

  static std::vector<TokenId> greedy(ds4::Session& s, int n) {
    std::vector<TokenId> out;
    for (int i = 0; i < n; ++i) {
      out.push_back(argmax(s.logits()));
      if (!s.eval(out.back()).is_ok()) break;
    }
    return out;
  }

  void reference_gates(const std::string& models, const std::string& refs, const std::string& shape,
                       bool exact) {
    const CudaMode mode(exact);
    auto e = open(models + "/" + shape + "-f32.gguf", ds4::BackendKind::kCuda, true);
    if (!e) return;
    const nlohmann::json j = nlohmann::json::parse(std::ifstream(refs + "/" + shape + ".json"));
    std::ifstream lf(refs + "/" + shape + ".logits.f32", std::ios::binary);
    const int v = e->info().n_vocab;
    std::vector<float> last(v);
    for (const auto& c : j["cases"]) {
      lf.read(reinterpret_cast<char*>(last.data()), v * sizeof(float));
      const auto toks = c["tokens"].get<std::vector<TokenId>>();
      auto s = std::move(e->create_session({.n_ctx = 1024, .prefill_chunk = 128})).value();
      std::vector<float> all;
      if (!s->append(toks, &all).is_ok()) {
        verdict(false, "append", shape);
        continue;
      }
      int mism = 0;
      for (size_t p = 0; p < toks.size(); ++p) {
        mism += argmax({all.data() + p * v, size_t(v)}) != c["topk_ids"][p][0].get<TokenId>();
      }
      const double err = rel_l2(s->logits().data(), last.data(), v);
      const auto gen = greedy(*s, 32);
      const auto want = c["continuation_without_cache"].get<std::vector<TokenId>>();
      char buf[160];
      std::snprintf(buf, sizeof buf, "rel L2 %.3g, top-1 mismatches %d, greedy %s", err, mism,
                    gen == want ? "identical" : "DIFFERENT");
      const std::string what = "HF " + shape + " " + std::to_string(toks.size()) +
                               " tokens (CUDA " + CudaMode::name(exact) + ")";
      verdict(err < 1e-4 && mism == 0 && gen == want, what.c_str(), buf);
    }
  }

  // exact: the logits must equal the CPU's bit for bit; otherwise the distance is information.
  void cpu_vs_cuda(const std::string& models, const std::string& refs, const std::string& shape,
                   const std::string& recipe, bool exact, bool hf = false) {
    const std::string path = models + "/" + shape + "-" + recipe + ".gguf";
    const CudaMode mode(exact);
    auto cpu = open(path, ds4::BackendKind::kCpu, hf);
    auto gpu = open(path, ds4::BackendKind::kCuda, hf);
    if (!cpu || !gpu) return;
    const nlohmann::json j = nlohmann::json::parse(std::ifstream(refs + "/" + shape + ".json"));
    const int v = cpu->info().n_vocab;
    for (const auto& c : j["cases"]) {
      const auto toks = c["tokens"].get<std::vector<TokenId>>();
      auto a = std::move(cpu->create_session({.n_ctx = 1024, .prefill_chunk = 128})).value();
      auto b = std::move(gpu->create_session({.n_ctx = 1024, .prefill_chunk = 128})).value();
      if (!a->append(toks).is_ok() || !b->append(toks).is_ok()) {
        verdict(false, "append", path);
        continue;
      }
      const double err = rel_l2(b->logits().data(), a->logits().data(), v);
      const auto ga = greedy(*a, 32), gb = greedy(*b, 32);
      char buf[160];
      std::snprintf(buf, sizeof buf, "last logits rel L2 %.3g, greedy %s", err,
                    ga == gb ? "identical" : "DIFFERENT");
      const std::string what = std::string("CPU vs CUDA ") + CudaMode::name(exact) + " " + shape +
                               "-" + recipe + (hf ? " (HF mode) " : " ") +
                               std::to_string(toks.size()) + " tokens";
      if (exact) {
        verdict(err == 0 && ga == gb, what.c_str(), buf);
      } else {
        std::printf("%-4s %-58s %s\n", "info", what.c_str(), buf);
      }
    }
  }

  // Decode steps submitted as CUDA graphs (the default) against eager CUDA steps
  // (DS4_CUDA_GRAPHS=0) and the CPU: every step's logits bit for bit, over enough steps to cross
  // compressor emissions (every 4th and 128th position) and the indexer's start. The graphs are
  // cut at every sublayer (DS4_CUDA_GRAPH_SEGMENT=1), the most segments a step can have.
  void decode_paths(const std::string& models, int steps) {
    const std::string path = models + "/tiny-q2.gguf";
    setenv("DS4_CUDA_GRAPHS", "0", 1);
    auto eager = open(path, ds4::BackendKind::kCuda, false);
    setenv("DS4_CUDA_GRAPHS", "1", 1);
    setenv("DS4_CUDA_GRAPH_SEGMENT", "1", 1);
    auto graph = open(path, ds4::BackendKind::kCuda, false);
    unsetenv("DS4_CUDA_GRAPH_SEGMENT");
    auto cpu = open(path, ds4::BackendKind::kCpu, false);
    if (!eager || !graph || !cpu) return;
    const ds4::SessionOptions so{.n_ctx = steps + 128, .prefill_chunk = 64};
    auto a = std::move(cpu->create_session(so)).value();
    auto b = std::move(eager->create_session(so)).value();
    auto c = std::move(graph->create_session(so)).value();
    std::vector<TokenId> prompt{0};
    for (int i = 1; i < 100; ++i) prompt.push_back(static_cast<TokenId>(1000 + 37 * i));
    bool ok = a->append(prompt).is_ok() && b->append(prompt).is_ok() && c->append(prompt).is_ok();
    int diff_eager = 0, diff_graph = 0, done = 0;
    for (; ok && done < steps; ++done) {
      const auto la = a->logits(), lb = b->logits(), lc = c->logits();
      diff_eager += !std::equal(la.begin(), la.end(), lb.begin(), lb.end());
      diff_graph += !std::equal(lb.begin(), lb.end(), lc.begin(), lc.end());
      const TokenId t = argmax(la);
      ok = a->eval(t).is_ok() && b->eval(t).is_ok() && c->eval(t).is_ok();
    }
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "%d steps: logits differ CPU vs eager CUDA in %d, eager vs graphs in %d", done,
                  diff_eager, diff_graph);
    verdict(ok && diff_eager == 0 && diff_graph == 0, "decode: CPU, CUDA eager, CUDA graphs", buf);
  }

  void long_context(const std::string& models, int n) {
    const std::string path = models + "/tiny-q2.gguf";
    auto cpu = open(path, ds4::BackendKind::kCpu, false);
    auto gpu = open(path, ds4::BackendKind::kCuda, false);
    if (!cpu || !gpu) return;
    std::vector<TokenId> toks{0};
    uint32_t x = 1;
    while (static_cast<int>(toks.size()) < n) {
      x = x * 1664525u + 1013904223u;
      toks.push_back(static_cast<TokenId>(1000 + (x >> 8) % 99000));
    }
    const int chunk = 2048;
    auto a = std::move(cpu->create_session({.n_ctx = n + 64, .prefill_chunk = chunk})).value();
    auto b = std::move(gpu->create_session({.n_ctx = n + 64, .prefill_chunk = chunk})).value();
    double worst = 0, t_cpu = 0, t_gpu = 0;
    bool finite = true;
    for (int at = 0; at < n; at += chunk) {
      const std::span<const TokenId> part(toks.data() + at, std::min(chunk, n - at));
      auto t0 = std::chrono::steady_clock::now();
      (void)a->append(part);
      auto t1 = std::chrono::steady_clock::now();
      (void)b->append(part);
      auto t2 = std::chrono::steady_clock::now();
      t_cpu += std::chrono::duration<double>(t1 - t0).count();
      t_gpu += std::chrono::duration<double>(t2 - t1).count();
      for (float f : b->logits()) finite = finite && std::isfinite(f);
      worst = std::max(worst, rel_l2(b->logits().data(), a->logits().data(), a->logits().size()));
    }
    const auto ga = greedy(*a, 16), gb = greedy(*b, 16);
    char buf[200];
    std::snprintf(
        buf, sizeof buf,
        "worst chunk-end logits rel L2 %.3g, greedy %s, finite %s; CPU %.1f s, CUDA %.1f s", worst,
        ga == gb ? "identical" : "DIFFERENT", finite ? "yes" : "NO", t_cpu, t_gpu);
    const std::string what = "long context tiny-q2 " + std::to_string(n) + " tokens";
    verdict(worst < 1e-3 && ga == gb && finite, what.c_str(), buf);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: ds4-cuda-check MODELS_DIR REF_DIR [LONG_TOKENS]\n");
    return 2;
  }
  const std::string models = argv[1], refs = argv[2];
  const int long_tokens = argc > 3 ? std::atoi(argv[3]) : 0;
  Checker ck;
  if (long_tokens < 0) {  // diagnosis: which numerics switch or weight type differs
    ck.cpu_vs_cuda(models, refs, "tiny", "f32", true, false);
    ck.cpu_vs_cuda(models, refs, "tiny", "q8", true, true);
    ck.cpu_vs_cuda(models, refs, "tiny", "f16", true, true);
    ck.cpu_vs_cuda(models, refs, "tiny", "q2", true, true);
  }
  for (const bool exact : {true, false}) {
    for (const char* shape : {"tiny", "small"}) ck.reference_gates(models, refs, shape, exact);
    for (const char* recipe : {"q8", "q2", "q4"})
      ck.cpu_vs_cuda(models, refs, "tiny", recipe, exact);
    ck.cpu_vs_cuda(models, refs, "small", "q2", exact);
  }
  ck.decode_paths(models, 400);
  if (long_tokens > 0) ck.long_context(models, long_tokens);
  std::printf("%s: %d failure(s)\n", ck.failures ? "FAILED" : "PASSED", ck.failures);
  return ck.failures ? 1 : 0;
}
