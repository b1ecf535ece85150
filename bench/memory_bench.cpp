// bench/memory_bench.cpp: the machine's memory bandwidth, the ceiling for the matvec benchmarks.
// Owns: a read-only sum over a 1 GiB buffer and a 512 MiB memcpy, each on 1 and 2 threads.
// Does not own: anything the engine runs.
//
// read_sum touches every 8-byte word once (the same access pattern as a weight stream). memcpy
// reports bytes copied; the DRAM traffic is twice that (one read, one write; more with
// write-allocate). Buffers are written once before timing so page faults stay out of the loop.
#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "bench_util.h"

namespace ds4::bench {
namespace {

constexpr int64_t kSumBytes = int64_t{1} << 30;
constexpr int64_t kCopyBytes = int64_t{512} << 20;

// Sum of n words, four independent chains so the adds do not limit the loads.
uint64_t sum_words(const uint64_t* p, int64_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a += p[i];
    b += p[i + 1];
    c += p[i + 2];
    d += p[i + 3];
  }
  for (; i < n; ++i) a += p[i];
  return a + b + c + d;
}

void run_threads(base::ThreadPool* pool, int threads, const std::function<void(int64_t)>& fn) {
  if (pool != nullptr) {
    pool->parallel_for(threads, fn);
  } else {
    fn(0);
  }
}

void bm_read_sum(benchmark::State& state, int threads) {
  const int64_t words = kSumBytes / 8;
  std::vector<uint64_t> buf(static_cast<size_t>(words));
  for (int64_t i = 0; i < words; ++i) buf[static_cast<size_t>(i)] = static_cast<uint64_t>(i);
  std::unique_ptr<base::ThreadPool> pool;
  if (threads > 1) pool = std::make_unique<base::ThreadPool>(threads);
  std::vector<uint64_t> partial(static_cast<size_t>(threads));
  for (auto _ : state) {
    run_threads(pool.get(), threads, [&](int64_t t) {
      const int64_t chunk = words / threads;
      partial[static_cast<size_t>(t)] = sum_words(buf.data() + t * chunk, chunk);
    });
    benchmark::DoNotOptimize(partial.data());
  }
  set_rate(state, "read_GBps", static_cast<double>(kSumBytes));
}

void bm_memcpy(benchmark::State& state, int threads) {
  std::vector<uint8_t> src(static_cast<size_t>(kCopyBytes), 1);
  std::vector<uint8_t> dst(static_cast<size_t>(kCopyBytes), 2);
  std::unique_ptr<base::ThreadPool> pool;
  if (threads > 1) pool = std::make_unique<base::ThreadPool>(threads);
  for (auto _ : state) {
    run_threads(pool.get(), threads, [&](int64_t t) {
      const int64_t chunk = kCopyBytes / threads;
      std::memcpy(dst.data() + t * chunk, src.data() + t * chunk, static_cast<size_t>(chunk));
    });
    benchmark::ClobberMemory();
  }
  set_rate(state, "copied_GBps", static_cast<double>(kCopyBytes));
}

}  // namespace

void register_memory_benchmarks() {
  for (int threads : {1, 2}) {
    benchmark::RegisterBenchmark(
        ("memory/read_sum_1GiB/threads:" + std::to_string(threads)).c_str(), bm_read_sum, threads)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(
        ("memory/memcpy_512MiB/threads:" + std::to_string(threads)).c_str(), bm_memcpy, threads)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
}

}  // namespace ds4::bench
