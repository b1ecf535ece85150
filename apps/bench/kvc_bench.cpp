// apps/bench/kvc_bench.cpp: `ds4-kvc-bench` -- what verifying a disk KV cache file's checksums
// costs at load (bench/kvcache.md). It writes one KVC file of about --mb MB (a DSV4 payload header
// declaring --tokens tokens, then pseudo-random bytes: the load path reads and hashes bytes, it
// does not decode them) into a fresh directory under --dir, then times KvcStore::read_file, the
// store's load, alternately with verification (each 256 KiB piece hashed right after its read)
// and without (framing only), --reps times each. It also times the
// checksum alone, on a buffer in the cache and on the whole file in memory. Wall time is what a
// load costs; the process's CPU time (all threads, the kernel's copy included) is the work it
// does, which time-slicing on a busy machine does not inflate; the load average before and after
// says how busy the machine was.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/checksum.h"
#include "kv/kvc_store.h"
#include "kv/snapshot.h"
#include "kvc_session.h"

namespace {

constexpr int kRunError = 1;
// The load speed the throughput work targets: a 29k-token session of about 420 MB in 150 ms.
constexpr double kTargetLoadMs = 150.0;

struct Options {
  std::string dir = "/dev/shm";
  double mb = 420;
  uint32_t tokens = 29000;
  int reps = 7;
  bool keep = false;
};

struct Times {
  double wall_ms = 0;
  double cpu_ms = 0;
};

double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

template <typename F>
Times timed(F&& f) {
  const double c0 = process_cpu_ms();
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return {std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
          process_cpu_ms() - c0};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A payload of `bytes` bytes that starts as a DSV4 payload of `tokens` tokens would.
std::vector<uint8_t> synthetic_payload(size_t bytes, uint32_t tokens) {
  std::vector<uint8_t> p(std::max<size_t>(bytes, 64));
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i + 8 <= p.size(); i += 8) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift64: incompressible, cheap
    std::memcpy(p.data() + i, &x, 8);
  }
  const uint32_t head[13] = {ds4::kv::kSnapshotMagic,
                             ds4::kv::kSnapshotVersion,
                             32768,
                             2048,
                             0,
                             0,
                             0,
                             tokens,
                             0,
                             512,
                             128,
                             0,
                             0};
  std::memcpy(p.data(), head, sizeof head);
  return p;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five;
  in >> one >> five;
  return one + " " + five;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"ds4-kvc-bench: KV cache file load time with and without checksum verification"};
  app.add_option("--dir", o.dir, "where the file is written (a tmpfs measures the CPU side)")
      ->capture_default_str();
  app.add_option("--mb", o.mb, "payload size in MB (10^6 bytes)")
      ->check(CLI::Range(1.0, 65536.0))
      ->capture_default_str();
  app.add_option("--tokens", o.tokens, "tokens the header and payload declare")
      ->check(CLI::Range(1u, 1u << 24))
      ->capture_default_str();
  app.add_option("--reps", o.reps, "loads timed each way")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_flag("--keep", o.keep, "leave the file in place");
  ds4bench::SessionBenchOptions session;
  app.add_option("--model", session.model,
                 "session mode: a session of this model at --tokens tokens (a synthesized state) "
                 "imported, exported, written, read and restarted");
  app.add_option("--backend", session.backend, "session mode: cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("-t,--threads", session.threads, "session mode: CPU threads (0: all)")
      ->check(CLI::Range(0, 1024));
  CLI11_PARSE(app, argc, argv);

  const std::string load_before = load_average();
  std::string dir = o.dir + "/ds4-kvc-bench-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) {
    std::fprintf(stderr, "ds4-kvc-bench: cannot create a directory under '%s'\n", o.dir.c_str());
    return kRunError;
  }
  if (!session.model.empty()) {
    session.tokens = o.tokens;
    session.reps = o.reps;
    session.dir = dir;
    const int rc = ds4bench::run_session_bench(session);
    if (!o.keep) std::filesystem::remove_all(dir);
    return rc;
  }
  const std::vector<uint8_t> payload = synthetic_payload(static_cast<size_t>(o.mb * 1e6), o.tokens);
  const std::string text = "<｜begin▁of▁sentence｜>ds4-kvc-bench";
  ds4::kv::KvcStoreOptions so{.dir = dir, .budget_bytes = uint64_t{1} << 40};
  auto store = ds4::kv::KvcStore::open(so);
  if (!store.is_ok()) {
    std::fprintf(stderr, "ds4-kvc-bench: %s\n", store.status().to_string().c_str());
    return kRunError;
  }
  ds4::kv::KvcHeader h{.reason = ds4::kv::SaveReason::kCold, .tokens = o.tokens, .n_ctx = 32768};
  ds4::Status saved;
  const Times save = timed([&] { saved = store->save(h, text, payload, {}); });
  if (!saved.is_ok()) {
    std::fprintf(stderr, "ds4-kvc-bench: save: %s\n", saved.to_string().c_str());
    return kRunError;
  }
  const std::string path = dir + "/" + store->entries().at(0).name;
  const uint64_t file_bytes = store->entries().at(0).file_bytes;

  // One load of each kind first (page cache, allocator), then alternate so drifting load from
  // other processes falls on both.
  std::vector<double> wall[2], cpu[2];
  for (int rep = -1; rep < o.reps; ++rep) {
    for (const bool verify : {true, false}) {
      ds4::Status st;
      const Times t = timed([&] {
        auto r = ds4::kv::KvcStore::read_file(path, uint64_t{1} << 40, {}, {.verify = verify});
        st = r.status();
      });
      if (!st.is_ok()) {
        std::fprintf(stderr, "ds4-kvc-bench: load: %s\n", st.to_string().c_str());
        return kRunError;
      }
      if (rep < 0) continue;
      wall[verify].push_back(t.wall_ms);
      cpu[verify].push_back(t.cpu_ms);
    }
  }

  // The checksum alone: a 256 KiB buffer (in the core's cache, as the load hashes) and the whole
  // file already in memory (what hashing after the read would cost).
  std::vector<uint8_t> piece(payload.begin(), payload.begin() + (256 << 10));
  uint64_t sink = 0;
  const int cache_reps = 4000;
  const Times cached = timed([&] {
    for (int i = 0; i < cache_reps; ++i) sink += ds4::base::checksum64(piece, i);
  });
  const ds4::base::ByteBuffer whole = std::move(
      ds4::kv::KvcStore::read_file(path, uint64_t{1} << 40, {}, {.verify = false})->bytes);
  std::vector<double> mem_cpu;
  for (int rep = 0; rep < 3; ++rep) {
    mem_cpu.push_back(timed([&] { sink += ds4::kv::kvc_checksums(whole.span()).body; }).cpu_ms);
  }
  const double gb = static_cast<double>(file_bytes) / 1e9;

  std::printf(
      "ds4-kvc-bench: %s, %ld cores; checksum kernel %s; load average (1, 5 min) %s "
      "before, %s after\n",
      cpu_model().c_str(), ::sysconf(_SC_NPROCESSORS_ONLN), ds4::base::checksum_kernel_name(),
      load_before.c_str(), load_average().c_str());
  std::printf("file: %llu bytes (%u tokens) in %s; save (encode, hash, write, fsync) %.1f ms\n",
              static_cast<unsigned long long>(file_bytes), o.tokens, o.dir.c_str(), save.wall_ms);
  const auto least = [](const std::vector<double>& v) {
    return *std::min_element(v.begin(), v.end());
  };
  std::printf(
      "\n| load (%d reps each) | wall median ms | wall min ms | CPU median ms | CPU min ms |\n",
      o.reps);
  std::printf("|---|---|---|---|---|\n");
  for (const bool verify : {false, true}) {
    std::printf("| %s | %.1f | %.1f | %.1f | %.1f |\n",
                verify ? "verified (each piece hashed after its read)" : "framing only",
                median(wall[verify]), least(wall[verify]), median(cpu[verify]), least(cpu[verify]));
  }
  // The difference of the minimums is the least disturbed by other processes.
  const double target_ms = kTargetLoadMs * gb / 0.42;  // the target speed for this file's size
  const auto line = [&](const char* what, double extra) {
    std::printf("verification, %s: %+.1f ms = %.1f%% of a %.0f ms load at the target speed\n", what,
                extra, 100 * extra / target_ms, target_ms);
  };
  std::printf("\n");
  line("wall, medians", median(wall[true]) - median(wall[false]));
  line("wall, minimums", least(wall[true]) - least(wall[false]));
  line("CPU, medians", median(cpu[true]) - median(cpu[false]));
  line("CPU, minimums", least(cpu[true]) - least(cpu[false]));
  std::printf(
      "checksum alone: %.1f GB/s on a 256 KiB buffer in cache, %.1f GB/s over the file "
      "in memory (CPU time)%s\n",
      cache_reps * (256.0 * 1024) / 1e9 / (cached.cpu_ms / 1e3), gb / (median(mem_cpu) / 1e3),
      sink == 42 ? " " : "");
  if (!o.keep) std::filesystem::remove_all(dir);
  return 0;
}
