// bench/bench_main.cpp: entry point of ds4-kernel-bench.
// Owns: registration order and Google Benchmark start-up.
// Does not own: the benchmarks (kernel_bench.cpp, memory_bench.cpp).
#include <benchmark/benchmark.h>

#include "bench_util.h"

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ds4::bench::register_memory_benchmarks();
  ds4::bench::register_kernel_benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
