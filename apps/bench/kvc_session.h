// apps/bench/kvc_session.h: ds4-kvc-bench's session mode (--model): what saving a session to the
// disk KV cache and loading it back costs end to end (issue 55 item 4), on a model file and a
// backend, without prefilling: the session's state is a synthesized DSV4 payload of --tokens
// tokens (random values, the layout that many tokens give the model's shape).
#pragma once

#include <cstdint>
#include <string>

namespace ds4bench {

struct SessionBenchOptions {
  std::string model;
  std::string backend = "cpu";
  int threads = 0;
  uint32_t tokens = 29000;
  int reps = 7;
  std::string dir;  // an existing directory the KVC store may use
};

// Prints the table; returns the exit status (1: a step failed, with one line on stderr).
int run_session_bench(const SessionBenchOptions& o);

}  // namespace ds4bench
