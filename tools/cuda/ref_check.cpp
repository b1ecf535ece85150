// tools/cuda/ref_check.cpp: `ds4-ref-check MODEL.gguf REF [cpu|cuda]` -- one model file against
// Hugging Face reference vectors in the tools/reference format (REF.json + REF.logits.f32: token
// sequences, every position's top-k, the last position's logits, a greedy continuation). Runs the
// engine in Hugging Face mode (simulations off) and applies the gates of tests/model: relative L2
// of the last logits, top-1 at every position, the greedy continuation. Used on the GPU machine for
// checkpoints that transformers itself wrote (tools/reference/saved_checkpoint.py). Exit status 1
// when a gate fails.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ds4/engine.h"

namespace {

using ds4::TokenId;

// The Hugging Face gate of tests/model (float32 on both sides; sums in another order).
constexpr double kMaxRelL2 = 1e-4;

TokenId argmax(std::span<const float> v) {
  size_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[best]) best = i;
  return static_cast<TokenId>(best);
}

double rel_l2(std::span<const float> a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: ds4-ref-check MODEL.gguf REF_PREFIX [cpu|cuda]\n");
    return 2;
  }
  ds4::EngineOptions o;
  o.model_path = argv[1];
  o.backend =
      argc > 3 && std::string(argv[3]) == "cuda" ? ds4::BackendKind::kCuda : ds4::BackendKind::kCpu;
  o.qat_simulation = false;
  o.f16_kv_rows = false;
  auto engine = ds4::Engine::open(o);
  if (!engine.is_ok()) {
    std::fprintf(stderr, "ds4-ref-check: %s\n", engine.status().to_string().c_str());
    return 1;
  }
  const std::string ref = argv[2];
  std::ifstream jf(ref + ".json"), lf(ref + ".logits.f32", std::ios::binary);
  if (!jf || !lf) {
    std::fprintf(stderr, "ds4-ref-check: cannot read %s.json / %s.logits.f32\n", ref.c_str(),
                 ref.c_str());
    return 1;
  }
  const nlohmann::json j = nlohmann::json::parse(jf);
  const int v = (*engine)->info().n_vocab;
  int failures = 0;
  for (const auto& c : j["cases"]) {
    std::vector<float> last(static_cast<size_t>(v));
    lf.read(reinterpret_cast<char*>(last.data()), static_cast<std::streamsize>(v * sizeof(float)));
    const auto toks = c["tokens"].get<std::vector<TokenId>>();
    auto s = std::move((*engine)->create_session({.n_ctx = 4096, .prefill_chunk = 128})).value();
    std::vector<float> all;
    if (ds4::Status st = s->append(toks, &all).status(); !st.is_ok()) {
      std::printf("FAIL %zu tokens: %s\n", toks.size(), st.to_string().c_str());
      ++failures;
      continue;
    }
    int mism = 0;
    for (size_t p = 0; p < toks.size(); ++p)
      mism += argmax({all.data() + p * v, size_t(v)}) != c["topk_ids"][p][0].get<TokenId>();
    const double err = rel_l2(s->logits(), last);
    const auto want = c["continuation_without_cache"].get<std::vector<TokenId>>();
    std::vector<TokenId> got;
    for (size_t i = 0; i < want.size(); ++i) {
      got.push_back(argmax(s->logits()));
      if (!s->eval(got.back()).is_ok()) break;
    }
    const bool ok = err < kMaxRelL2 && mism == 0 && got == want;
    std::printf("%-4s %4zu tokens: rel L2 %.3g, top-1 mismatches %d of %zu, %zu-token greedy %s\n",
                ok ? "ok" : "FAIL", toks.size(), err, mism, toks.size(), want.size(),
                got == want ? "identical" : "DIFFERENT");
    failures += ok ? 0 : 1;
  }
  return failures == 0 ? 0 : 1;
}
