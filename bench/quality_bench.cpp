// bench/quality_bench.cpp: ds4-quality-bench -- how far a quantized model file drifts from the
// f32 file of the same synthetic weights, on the reference token sequences.
// Owns: per-position KL(P_f32 || P_quant) (double-precision log-softmax), top-1 agreement, and the
// comparison of 32-token greedy continuations, per case and overall, for one or both numerics
// settings. Results and how to read them: bench/quality.md.
// The quant file must hold a quantization of the f32 file's weights: `ds4-gguf synth --quant X`
// writes independent random blocks, so compare against `ds4-gguf convert --quant X` of the
// checkpoint that `ds4-gguf synth --quant f32 --hf-dir` writes (bench/quality.md).
// Does not own: the engine (include/ds4/engine.h) or the reference sequences
// (tests/data/reference/SHAPE.json, written by the transformers oracle).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "ds4/engine.h"
#include "ds4/sampling.h"
#include "ds4/session.h"

namespace {

using ds4::TokenId;

struct Args {
  std::string f32, quant, reference;
  std::string numerics = "canonical";  // canonical | plain | both
  int threads = 2;
};

struct Case {
  std::vector<TokenId> prompt, continuation;
};

void usage() {
  std::fprintf(
      stderr,
      "usage: ds4-quality-bench --f32 FILE --quant FILE --reference SHAPE.json\n"
      "         [--threads N=2] [--numerics canonical|plain|both]\n"
      "canonical: qat_simulation and f16_kv_rows on (EngineOptions defaults); plain: both "
      "off\n"
      "QUANT must quantize F32's weights (ds4-gguf synth --hf-dir, then ds4-gguf convert)\n");
}

bool parse(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "-h" || k == "--help" || i + 1 >= argc) return false;
    const char* v = argv[++i];
    if (k == "--f32") {
      a.f32 = v;
    } else if (k == "--quant") {
      a.quant = v;
    } else if (k == "--reference") {
      a.reference = v;
    } else if (k == "--threads") {
      a.threads = std::atoi(v);
    } else if (k == "--numerics") {
      a.numerics = v;
    } else {
      std::fprintf(stderr, "ds4-quality-bench: unknown option %s\n", k.c_str());
      return false;
    }
  }
  const bool numerics_ok =
      a.numerics == "canonical" || a.numerics == "plain" || a.numerics == "both";
  return !a.f32.empty() && !a.quant.empty() && !a.reference.empty() && numerics_ok;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "ds4-quality-bench: %s\n", what.c_str());
  std::exit(1);
}

std::vector<Case> load_cases(const std::string& path) {
  std::ifstream in(path);
  if (!in) die("cannot read " + path);
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<Case> cases;
  for (const auto& c : j.at("cases")) {
    cases.push_back({c.at("tokens").get<std::vector<TokenId>>(),
                     c.at("continuation").get<std::vector<TokenId>>()});
  }
  return cases;
}

std::unique_ptr<ds4::Engine> open(const std::string& path, int threads, bool canonical) {
  ds4::EngineOptions eo;
  eo.model_path = path;
  eo.threads = threads;
  eo.qat_simulation = canonical;
  eo.f16_kv_rows = canonical;
  auto e = ds4::Engine::open(eo);
  if (!e) die(e.status().to_string());
  return std::move(e).value();
}

std::unique_ptr<ds4::Session> new_session(ds4::Engine& e, size_t n_tokens) {
  auto s = e.create_session({.n_ctx = static_cast<int>(n_tokens) + 64, .prefill_chunk = 256});
  if (!s) die(s.status().to_string());
  return std::move(s).value();
}

// Logits after every token of `tokens` (tokens.size() x n_vocab).
std::vector<float> all_logits(ds4::Engine& e, const std::vector<TokenId>& tokens) {
  auto s = new_session(e, tokens.size());
  std::vector<float> out;
  if (auto r = s->append(tokens, &out); !r) die(r.status().to_string());
  return out;
}

// `n` greedy tokens after `prompt` (append, then Session::eval one token at a time).
std::vector<TokenId> greedy(ds4::Engine& e, const std::vector<TokenId>& prompt, size_t n) {
  auto s = new_session(e, prompt.size() + n);
  if (auto r = s->append(prompt); !r) die(r.status().to_string());
  std::vector<TokenId> out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(ds4::argmax(s->logits()));
    if (i + 1 < n) {
      if (auto st = s->eval(out.back()); !st) die(st.to_string());
    }
  }
  return out;
}

// log-softmax of one logits row, in double.
void log_softmax(std::span<const float> x, std::vector<double>& out) {
  out.resize(x.size());
  double mx = -INFINITY;
  for (float v : x) mx = std::max(mx, static_cast<double>(v));
  double sum = 0.0;
  for (float v : x) sum += std::exp(static_cast<double>(v) - mx);
  const double lse = mx + std::log(sum);
  for (size_t i = 0; i < x.size(); ++i) out[i] = static_cast<double>(x[i]) - lse;
}

size_t common_prefix(const std::vector<TokenId>& a, const std::vector<TokenId>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

struct Totals {
  double kl_sum = 0.0, kl_max = 0.0, h_sum = 0.0;
  size_t positions = 0, top1 = 0, greedy_equal = 0, cases = 0;
};

void run(const Args& a, const std::vector<Case>& cases, bool canonical) {
  const auto t_start = std::chrono::steady_clock::now();
  auto ef = open(a.f32, a.threads, canonical);
  auto eq = open(a.quant, a.threads, canonical);
  const int n_vocab = ef->info().n_vocab;
  std::printf("\nnumerics: %s (qat_simulation=%d, f16_kv_rows=%d)\n",
              canonical ? "canonical" : "plain", canonical, canonical);
  std::printf("%-5s %6s %8s %12s %12s %8s %14s %16s %8s\n", "case", "pos", "H(f32)", "mean KL",
              "max KL", "top-1", "f32 vs ref", "quant vs f32", "time s");
  Totals tot;
  std::vector<double> lf, lq;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const auto t0 = std::chrono::steady_clock::now();
    const Case& c = cases[ci];
    std::vector<TokenId> tokens = c.prompt;
    tokens.insert(tokens.end(), c.continuation.begin(), c.continuation.end());
    const std::vector<float> pf = all_logits(*ef, tokens);
    const std::vector<float> pq = all_logits(*eq, tokens);
    double kl_sum = 0.0, kl_max = 0.0, h_sum = 0.0;
    size_t top1 = 0;
    for (size_t p = 0; p < tokens.size(); ++p) {
      const std::span<const float> rf(pf.data() + p * n_vocab, n_vocab);
      const std::span<const float> rq(pq.data() + p * n_vocab, n_vocab);
      log_softmax(rf, lf);
      log_softmax(rq, lq);
      double kl = 0.0, h = 0.0;
      for (int v = 0; v < n_vocab; ++v) {
        const double p_f = std::exp(lf[v]);
        kl += p_f * (lf[v] - lq[v]);
        h -= p_f * lf[v];
      }
      kl_sum += kl;
      h_sum += h;
      kl_max = std::max(kl_max, kl);
      top1 += ds4::argmax(rf) == ds4::argmax(rq);
    }
    const size_t n_gen = c.continuation.size();
    const std::vector<TokenId> gf = greedy(*ef, c.prompt, n_gen);
    const std::vector<TokenId> gq = greedy(*eq, c.prompt, n_gen);
    const size_t ref_match = common_prefix(gf, c.continuation);
    const size_t q_match = common_prefix(gq, gf);
    char ref_col[32], q_col[32];
    std::snprintf(ref_col, sizeof ref_col, "%zu/%zu%s", ref_match, n_gen,
                  ref_match == n_gen ? " equal" : "");
    std::snprintf(q_col, sizeof q_col, "%zu/%zu%s", q_match, n_gen,
                  q_match == n_gen ? " equal" : "");
    std::printf("%-5zu %6zu %8.3f %12.4e %12.4e %7.2f%% %14s %16s %8.1f\n", ci, tokens.size(),
                h_sum / tokens.size(), kl_sum / tokens.size(), kl_max, 100.0 * top1 / tokens.size(),
                ref_col, q_col, seconds_since(t0));
    tot.kl_sum += kl_sum;
    tot.h_sum += h_sum;
    tot.kl_max = std::max(tot.kl_max, kl_max);
    tot.positions += tokens.size();
    tot.top1 += top1;
    tot.greedy_equal += q_match == n_gen;
    ++tot.cases;
  }
  std::printf("%-5s %6zu %8.3f %12.4e %12.4e %7.2f%% %14s %13zu/%zu eq %8.1f\n", "all",
              tot.positions, tot.h_sum / tot.positions, tot.kl_sum / tot.positions, tot.kl_max,
              100.0 * tot.top1 / tot.positions, "", tot.greedy_equal, tot.cases,
              seconds_since(t_start));
  std::printf("csv,%s,%s,%s,%zu,%.4f,%.6e,%.6e,%.4f,%zu,%zu\n", a.f32.c_str(), a.quant.c_str(),
              canonical ? "canonical" : "plain", tot.positions, tot.h_sum / tot.positions,
              tot.kl_sum / tot.positions, tot.kl_max, 100.0 * tot.top1 / tot.positions,
              tot.greedy_equal, tot.cases);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, a)) {
    usage();
    return 2;
  }
  const std::vector<Case> cases = load_cases(a.reference);
  std::printf("f32    %s\nquant  %s\nref    %s (%zu cases), threads %d\n", a.f32.c_str(),
              a.quant.c_str(), a.reference.c_str(), cases.size(), a.threads);
  std::printf(
      "KL(P_f32 || P_quant) in nats per position over prompt + reference continuation (teacher "
      "forced);\nH(f32): mean entropy of P_f32 in nats (ln 129280 = 11.77 is uniform);\n'f32 vs "
      "ref': leading greedy tokens of the f32 file equal to the reference "
      "continuation;\n'quant vs f32': leading greedy tokens of the quant file equal to the f32 "
      "file's.\n");
  if (a.numerics != "plain") run(a, cases, true);
  if (a.numerics != "canonical") run(a, cases, false);
  return 0;
}
