// bench/bench_util.h: shared helpers of the kernel benchmarks.
// Owns: the registration entry points of each benchmark file and the rate counters.
// Does not own: the kernels measured (src/quant).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>

namespace ds4::bench {

// Working set of the "cold" runs: well above the 32 MiB L3 of the machines we measure, so every
// weight byte comes from DRAM, as in single-token decode.
inline constexpr int64_t kColdBytes = int64_t{256} << 20;

// Adds a decimal GB/s counter (1e9 bytes per second) named `name` for `bytes` per iteration.
inline void set_rate(benchmark::State& state, const char* name, double bytes_per_iteration) {
  state.counters[name] =
      benchmark::Counter(bytes_per_iteration * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate, benchmark::Counter::OneK::kIs1000);
}

void register_kernel_benchmarks();
void register_memory_benchmarks();

}  // namespace ds4::bench
