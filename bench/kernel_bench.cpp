// bench/kernel_bench.cpp: matrix-vector products per weight format, reference vs AVX2 vs AVX-512
// kernels.
// Owns: the matvec benchmarks (4096 x 4096 weights, 1 and 2 threads, DRAM-cold and cache-hot;
// and short rows of 1-16 blocks, one thread, hot: the expert rows of the test shapes).
// Does not own: the kernels (src/quant/dot.h) or the bandwidth baselines (memory_bench.cpp).
//
// Each iteration is one quant::matvec(): quantise x to the format's activation blocks, then one
// dot per row (for the 256-value formats, one multi-row kernel call per 16 rows). The weights_GBps
// counter is weight bytes read per second. "cold" rotates over copies of the matrix filling
// kColdBytes, so weights stream from DRAM as in single-token decode; "hot" repeats one matrix,
// which stays in L3 for the formats smaller than 32 MiB.
#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/f16.h"
#include "base/thread_pool.h"
#include "bench_util.h"
#include "gguf/types.h"
#include "quant/dot.h"
#include "quant/quantize.h"

namespace ds4::bench {
namespace {

using gguf::GgufType;

constexpr int64_t kRows = 4096;
constexpr int64_t kCols = 4096;

int64_t matrix_bytes(GgufType t) {
  return static_cast<int64_t>(*gguf::byte_size(t, static_cast<uint64_t>(kRows * kCols)));
}

// Offsets (bytes within a block) of f16 scale fields that random bytes must not fill: NaN, Inf or
// subnormal scales would measure exception handling, not the kernel.
std::vector<int> scale_offsets(GgufType t) {
  switch (t) {
    case GgufType::kQ8_0: return {0};
    case GgufType::kQ2_K: return {80, 82};
    case GgufType::kQ4_K: return {0, 2};
    case GgufType::kIQ2_XXS: return {0};
    default: return {};
  }
}

// One matrix of valid random content (kRows x kCols values; any row length reads it).
std::vector<uint8_t> make_matrix(GgufType t) {
  std::vector<uint8_t> m(static_cast<size_t>(matrix_bytes(t)));
  std::mt19937_64 rng(1234);
  if (t == GgufType::kF16) {
    std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
    for (size_t i = 0; i + 1 < m.size(); i += 2) {
      const uint16_t h = f32_to_f16(dist(rng));
      std::memcpy(&m[i], &h, 2);
    }
    return m;
  }
  for (size_t i = 0; i + 8 <= m.size(); i += 8) {
    const uint64_t r = rng();
    std::memcpy(&m[i], &r, 8);
  }
  const auto info = gguf::type_info(static_cast<uint32_t>(t));
  const uint16_t scale = f32_to_f16(0.01f);
  for (size_t b = 0; b < m.size(); b += info->block_bytes) {
    for (int off : scale_offsets(t)) std::memcpy(&m[b + static_cast<size_t>(off)], &scale, 2);
  }
  return m;
}

// kAvx512Single: the AVX-512 table with its multi-row entries replaced by one single-row call
// per row (how the engine ran before the multi-row kernels), measured beside kAvx512.
enum class Kernels { kRef, kAvx2, kAvx512, kAvx512Single };

const char* kernels_name(Kernels k) {
  switch (k) {
    case Kernels::kRef: return "ref";
    case Kernels::kAvx2: return "avx2";
    case Kernels::kAvx512Single: return "avx512-single";
    default: return "avx512";
  }
}

template <class Block, auto kEntry>
void single_row_calls(const Block* w, const quant::BlockQ8_K* x, int64_t nb, int64_t n_rows,
                      float* y) {
  const quant::DotKernels& k = *quant::avx512_dot_kernels();
  for (int64_t r = 0; r < n_rows; ++r) y[r] = (k.*kEntry)(w + r * nb, x, nb);
}

const quant::DotKernels* avx512_single_row_table() {
  static const quant::DotKernels* const kTable = []() -> const quant::DotKernels* {
    if (quant::avx512_dot_kernels() == nullptr) return nullptr;
    static quant::DotKernels t = *quant::avx512_dot_kernels();
    t.name = "avx512-single";
    t.q2_k_rows = single_row_calls<quant::BlockQ2_K, &quant::DotKernels::q2_k>;
    t.q4_k_rows = single_row_calls<quant::BlockQ4_K, &quant::DotKernels::q4_k>;
    t.iq2_xxs_rows = single_row_calls<quant::BlockIQ2_XXS, &quant::DotKernels::iq2_xxs>;
    return &t;
  }();
  return kTable;
}

struct MatvecCase {
  GgufType type;
  Kernels kernels;
  int threads;
  bool cold;
  int64_t cols = kCols;  // rows = kRows * kCols / cols: the same bytes for every row length
};

void run_matvec(benchmark::State& state, MatvecCase c) {
  const quant::DotKernels* k = c.kernels == Kernels::kRef      ? &quant::reference_dot_kernels()
                               : c.kernels == Kernels::kAvx2   ? quant::avx2_dot_kernels()
                               : c.kernels == Kernels::kAvx512 ? quant::avx512_dot_kernels()
                                                               : avx512_single_row_table();
  if (k == nullptr) {
    state.SkipWithError(c.kernels == Kernels::kAvx2 ? "AVX2/FMA/F16C not available"
                                                    : "AVX-512 kernels not available");
    return;
  }
  const int64_t rows = kRows * kCols / c.cols;
  const int64_t bytes = matrix_bytes(c.type);
  const int64_t copies = c.cold ? std::max<int64_t>(2, (kColdBytes + bytes - 1) / bytes) : 1;
  const std::vector<uint8_t> one = make_matrix(c.type);
  std::vector<uint8_t> all(static_cast<size_t>(bytes * copies));
  for (int64_t i = 0; i < copies; ++i)
    std::memcpy(&all[static_cast<size_t>(i * bytes)], one.data(), one.size());
  std::vector<float> x(static_cast<size_t>(c.cols));
  std::mt19937 rng(5);
  std::normal_distribution<float> dist;
  for (float& v : x) v = dist(rng);
  std::vector<float> y(static_cast<size_t>(rows));
  std::unique_ptr<base::ThreadPool> pool;
  if (c.threads > 1) pool = std::make_unique<base::ThreadPool>(c.threads);
  int64_t next = 0;
  for (auto _ : state) {
    const uint8_t* w = &all[static_cast<size_t>(next * bytes)];
    const Status s = quant::matvec(*k, c.type, w, rows, c.cols, x.data(), y.data(), pool.get());
    if (!s.is_ok()) {
      state.SkipWithError(s.to_string().c_str());
      break;
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
    next = (next + 1) % copies;
  }
  set_rate(state, "weights_GBps", static_cast<double>(bytes));
  state.counters["MiB_per_matrix"] = static_cast<double>(bytes) / (1 << 20);
}

// Encoder throughput (tools/quantize cost), one thread: 64 rows of 4096 N(0, 1) weights.
void run_quantize(benchmark::State& state, GgufType t) {
  constexpr int64_t kQuantRows = 64;
  std::vector<float> src(static_cast<size_t>(kQuantRows * kCols));
  std::mt19937 rng(9);
  std::normal_distribution<float> dist;
  for (float& v : src) v = dist(rng);
  std::vector<uint8_t> dst(*gguf::byte_size(t, static_cast<uint64_t>(src.size())));
  for (auto _ : state) {
    const Status s = quant::quantize_rows(t, src.data(), dst.data(), kQuantRows, kCols, nullptr);
    if (!s.is_ok()) {
      state.SkipWithError(s.to_string().c_str());
      break;
    }
    benchmark::ClobberMemory();
  }
  state.counters["Mweights_per_s"] = benchmark::Counter(
      static_cast<double>(src.size()) * static_cast<double>(state.iterations()) / 1e6,
      benchmark::Counter::kIsRate);
}

}  // namespace

void register_kernel_benchmarks() {
  const GgufType types[] = {GgufType::kQ8_0, GgufType::kQ2_K, GgufType::kQ4_K, GgufType::kIQ2_XXS,
                            GgufType::kF16};
  for (bool cold : {true, false}) {
    for (GgufType t : types) {
      for (Kernels kernels : {Kernels::kRef, Kernels::kAvx2, Kernels::kAvx512}) {
        // Hot runs only for the fast kernels (the compute ceiling). The AVX-512 table has its
        // own kernels only for the 256-value formats (Q8_0 and F16 are the AVX2 ones).
        if (!cold && kernels == Kernels::kRef) continue;
        if (kernels == Kernels::kAvx512 && (t == GgufType::kQ8_0 || t == GgufType::kF16)) continue;
        for (int threads : {1, 2}) {
          const std::string name = std::string("matvec/") + std::string(gguf::to_string(t)) + "/" +
                                   kernels_name(kernels) + "/threads:" + std::to_string(threads) +
                                   (cold ? "/cold" : "/hot");
          benchmark::RegisterBenchmark(name.c_str(), run_matvec,
                                       MatvecCase{t, kernels, threads, cold})
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime();
        }
      }
    }
  }
  // Short rows (hot, one thread): where the AVX-512 single-row kernels hand over to AVX2, and
  // what the multi-row entries gain over one call per row.
  for (GgufType t : {GgufType::kQ2_K, GgufType::kQ4_K, GgufType::kIQ2_XXS}) {
    for (Kernels kernels : {Kernels::kAvx2, Kernels::kAvx512Single, Kernels::kAvx512}) {
      for (int nb : {1, 2, 4, 6, 8, 16}) {
        const std::string name = std::string("matvec_short/") + std::string(gguf::to_string(t)) +
                                 "/" + kernels_name(kernels) + "/blocks:" + std::to_string(nb);
        benchmark::RegisterBenchmark(name.c_str(), run_matvec,
                                     MatvecCase{t, kernels, 1, false, int64_t{256} * nb})
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
      }
    }
  }
  for (GgufType t : types) {
    const std::string name = "quantize/" + std::string(gguf::to_string(t));
    benchmark::RegisterBenchmark(name.c_str(), run_quantize, t)->Unit(benchmark::kMillisecond);
  }
}

}  // namespace ds4::bench
