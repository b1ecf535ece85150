// bench/cpu_bench.cpp: ds4-cpu-bench -- end-to-end CPU prefill and decode speed of one model file.
// Owns: the synthetic prompt, the prefill/decode timing, the per-op time shares of each phase and
// the achieved decode weight bandwidth (from --active-bytes, which bench/active_bytes.sh computes
// from `ds4-gguf info`). Results and how to read them: bench/cpu.md.
// Does not own: the engine (include/ds4/engine.h), the kernels or the bandwidth reference, which
// comes from ds4-kernel-bench (bench/cpu-kernels.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ds4/engine.h"
#include "ds4/sampling.h"
#include "ds4/session.h"

namespace {

struct Args {
  std::string model;
  int threads = 2;
  int prompt_tokens = 512;
  int gen_tokens = 64;
  int ctx = 4096;
  int chunk = 256;
  int warmup = 32;            // tokens of a throw-away session run first (page faults, caches)
  double active_bytes = 0.0;  // weight bytes read per decoded token; 0 = unknown
  double dram_gbps = 33.5;    // the dev VM's 2-thread read_sum; pass the same session's figure
  uint64_t seed = 1;
};

void usage() {
  std::fprintf(
      stderr,
      "usage: ds4-cpu-bench --model FILE [--threads N=2] [--prompt-tokens P=512]\n"
      "         [--gen-tokens G=64] [--ctx C=4096] [--chunk K=256] [--warmup W=32]\n"
      "         [--active-bytes B] [--dram-gbps X=33.5] [--seed S=1]\n"
      "--active-bytes: weight bytes read per decoded token (bench/active_bytes.sh FILE)\n");
}

bool parse(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "-h" || k == "--help" || i + 1 >= argc) return false;
    const char* v = argv[++i];
    if (k == "--model") {
      a.model = v;
    } else if (k == "--threads") {
      a.threads = std::atoi(v);
    } else if (k == "--prompt-tokens") {
      a.prompt_tokens = std::atoi(v);
    } else if (k == "--gen-tokens") {
      a.gen_tokens = std::atoi(v);
    } else if (k == "--ctx") {
      a.ctx = std::atoi(v);
    } else if (k == "--chunk") {
      a.chunk = std::atoi(v);
    } else if (k == "--warmup") {
      a.warmup = std::atoi(v);
    } else if (k == "--active-bytes") {
      a.active_bytes = std::strtod(v, nullptr);
    } else if (k == "--dram-gbps") {
      a.dram_gbps = std::strtod(v, nullptr);
    } else if (k == "--seed") {
      a.seed = std::strtoull(v, nullptr, 10);
    } else {
      std::fprintf(stderr, "ds4-cpu-bench: unknown option %s\n", k.c_str());
      return false;
    }
  }
  return !a.model.empty() && a.prompt_tokens >= 1 && a.gen_tokens >= 0 &&
         a.prompt_tokens + a.gen_tokens < a.ctx;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// BOS (id 0) then ids drawn uniformly from [1000, 100000) by the seeded xorshift64* generator.
std::vector<ds4::TokenId> make_prompt(int n, uint64_t seed) {
  ds4::Rng rng(seed);
  std::vector<ds4::TokenId> t{0};
  while (static_cast<int>(t.size()) < n) t.push_back(1000 + static_cast<int>(rng.next() % 99000));
  return t;
}

// Prints each op's seconds, calls and share of the phase's wall time, plus the time spent outside
// the timed ops (forward-pass glue, logits copies, argmax).
void print_ops(const char* phase, const std::vector<ds4::OpTime>& ops, double wall) {
  std::printf("\n%s: per-op wall time (share of the phase's %.3f s)\n", phase, wall);
  std::printf("  %-12s %10s %9s %8s\n", "op", "seconds", "calls", "share");
  double sum = 0.0;
  for (const ds4::OpTime& o : ops) {
    sum += o.seconds;
    std::printf("  %-12s %10.4f %9lld %7.1f%%\n", o.op.c_str(), o.seconds,
                static_cast<long long>(o.calls), 100.0 * o.seconds / wall);
  }
  std::printf("  %-12s %10.4f %9s %7.1f%%\n", "(other)", wall - sum, "",
              100.0 * (wall - sum) / wall);
}

double op_seconds(const std::vector<ds4::OpTime>& ops, const char* name) {
  for (const ds4::OpTime& o : ops) {
    if (o.op == name) return o.seconds;
  }
  return 0.0;
}

int fail(const ds4::Status& s) {
  std::fprintf(stderr, "ds4-cpu-bench: %s\n", s.to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, a)) {
    usage();
    return 2;
  }
  ds4::EngineOptions eo;
  eo.model_path = a.model;
  eo.threads = a.threads;
  eo.profile_ops = true;
  auto t0 = std::chrono::steady_clock::now();
  auto engine = ds4::Engine::open(eo);
  if (!engine) return fail(engine.status());
  const double t_open = seconds_since(t0);
  ds4::Engine& e = **engine;
  const ds4::ModelInfo& info = e.info();
  std::printf("model      %s (shape %s, %d layers, n_embd %d, %.1f MB)\n", a.model.c_str(),
              info.shape.c_str(), info.n_layer, info.n_embd, info.file_bytes / 1e6);
  std::printf("run        threads %d, prompt %d, gen %d, ctx %d, chunk %d, open %.2f s\n",
              a.threads, a.prompt_tokens, a.gen_tokens, a.ctx, a.chunk, t_open);

  const ds4::SessionOptions so{.n_ctx = a.ctx, .prefill_chunk = a.chunk};
  const std::vector<ds4::TokenId> prompt = make_prompt(a.prompt_tokens, a.seed);
  if (a.warmup > 0) {
    // Touches the mapped weights (non-expert ones fully, experts as routed) outside the timing.
    t0 = std::chrono::steady_clock::now();
    auto s = e.create_session(so);
    if (!s) return fail(s.status());
    const int n = std::min<int>(a.warmup, a.prompt_tokens);
    if (auto r = (*s)->append(std::span(prompt).first(n)); !r) return fail(r.status());
    std::printf("warmup     %d tokens, %.2f s\n", n, seconds_since(t0));
  }

  auto session = e.create_session(so);
  if (!session) return fail(session.status());
  ds4::Session& s = **session;
  std::printf("kv state   %.1f MB at ctx %d\n", s.state_bytes() / 1e6, a.ctx);

  e.reset_op_times();
  t0 = std::chrono::steady_clock::now();
  if (auto r = s.append(prompt); !r) return fail(r.status());
  const double t_prefill = seconds_since(t0);
  const std::vector<ds4::OpTime> prefill_ops = e.op_times();

  e.reset_op_times();
  std::vector<ds4::TokenId> generated;
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < a.gen_tokens; ++i) {
    const ds4::TokenId tok = ds4::argmax(s.logits());
    generated.push_back(tok);
    if (auto st = s.eval(tok); !st) return fail(st);
  }
  const double t_decode = seconds_since(t0);
  const std::vector<ds4::OpTime> decode_ops = e.op_times();

  const double prefill_tps = a.prompt_tokens / t_prefill;
  const double decode_tps = a.gen_tokens > 0 ? a.gen_tokens / t_decode : 0.0;
  std::printf("\nprefill    %d tokens in %.3f s: %.2f tokens/s (%.2f ms/token)\n", a.prompt_tokens,
              t_prefill, prefill_tps, 1e3 * t_prefill / a.prompt_tokens);
  if (a.gen_tokens > 0) {
    std::printf("decode     %d tokens in %.3f s: %.2f tokens/s (%.2f ms/token)\n", a.gen_tokens,
                t_decode, decode_tps, 1e3 * t_decode / a.gen_tokens);
  }
  std::printf("generated  first tokens:");
  for (size_t i = 0; i < generated.size() && i < 8; ++i) std::printf(" %d", generated[i]);
  std::printf("\n");

  print_ops("prefill", prefill_ops, t_prefill);
  if (a.gen_tokens > 0) print_ops("decode", decode_ops, t_decode);

  double gbps = 0.0, weight_ops_gbps = 0.0;
  if (a.active_bytes > 0.0 && a.gen_tokens > 0) {
    gbps = a.active_bytes * decode_tps / 1e9;
    std::printf(
        "\ndecode bandwidth: %.1f MB of weights per token -> %.2f GB/s = %.1f%% of %.1f GB/s\n",
        a.active_bytes / 1e6, gbps, 100.0 * gbps / a.dram_gbps, a.dram_gbps);
    const double matmul_moe = op_seconds(decode_ops, "matmul") + op_seconds(decode_ops, "moe") +
                              op_seconds(decode_ops, "output_head");
    weight_ops_gbps = a.active_bytes * a.gen_tokens / matmul_moe / 1e9;
    std::printf("  (weight bytes over the matmul+moe+output_head time only: %.2f GB/s)\n",
                weight_ops_gbps);
  }
  std::printf(
      "\ncsv,model,shape,threads,prompt,gen,ctx,file_MB,prefill_tps,decode_tps,active_MB,"
      "decode_GBps,pct_dram\n");
  std::printf("csv,%s,%s,%d,%d,%d,%d,%.1f,%.3f,%.3f,%.2f,%.3f,%.1f\n", a.model.c_str(),
              info.shape.c_str(), a.threads, a.prompt_tokens, a.gen_tokens, a.ctx,
              info.file_bytes / 1e6, prefill_tps, decode_tps, a.active_bytes / 1e6, gbps,
              100.0 * gbps / a.dram_gbps);
  return 0;
}
