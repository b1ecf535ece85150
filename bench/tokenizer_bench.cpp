// bench/tokenizer_bench.cpp: ds4-tokenizer-bench VOCAB.gguf FILE... -- encode throughput.
// For each file: the first pass (empty BPE cache, as for text never seen before) and the median of
// five further passes (warm cache, the steady state of a server re-reading conversations), in MB/s
// of input, single thread, special tokens treated as text. Results: bench/tokenizer.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ds4/tokenizer.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: ds4-tokenizer-bench VOCAB.gguf FILE...\n");
    return 2;
  }
  std::printf("%-40s %12s %10s %14s %14s\n", "file", "bytes", "tokens", "first MB/s", "warm MB/s");
  for (int f = 2; f < argc; ++f) {
    // A fresh tokenizer per file, so every file's first pass starts from an empty cache.
    auto tok = ds4::Tokenizer::open(argv[1]);
    if (!tok) {
      std::fprintf(stderr, "ds4-tokenizer-bench: %s\n", tok.status().to_string().c_str());
      return 1;
    }
    std::ifstream in(argv[f], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "ds4-tokenizer-bench: cannot read %s\n", argv[f]);
      return 1;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    auto t0 = std::chrono::steady_clock::now();
    const size_t n_tokens = tok->encode(text, ds4::SpecialTokens::kAsText).size();
    const double first = seconds_since(t0);
    std::vector<double> warm;
    for (int rep = 0; rep < 5; ++rep) {
      t0 = std::chrono::steady_clock::now();
      (void)tok->encode(text, ds4::SpecialTokens::kAsText);
      warm.push_back(seconds_since(t0));
    }
    std::sort(warm.begin(), warm.end());
    const double mb = static_cast<double>(text.size()) / 1e6;
    std::string name = argv[f];
    if (name.size() > 40) name = "..." + name.substr(name.size() - 37);
    std::printf("%-40s %12zu %10zu %14.1f %14.1f\n", name.c_str(), text.size(), n_tokens,
                mb / first, mb / warm[2]);
  }
  return 0;
}
