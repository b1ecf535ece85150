// src/serve/pool_size.h: how many live sessions ds4-server keeps by default (--parallel 0).
// Owns: the sizing rule and its constants. Each session holds the KV state of `n_ctx` tokens
// (Engine::session_bytes: the model.md §5.2 formulas with float32 rows); the pool takes at most
// kPoolMemoryShare of the memory still free where sessions live, and at most
// kMaxDefaultSessions of them. Does not own: creating the sessions (scheduler.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ds4/engine.h"

namespace ds4::serve {

// Half of the free memory: the other half is for the step activations (they grow with
// --batch-tokens), the disk cache's checkpoint copies (one session's state each while it waits
// for the writer) and whatever else runs on the machine.
inline constexpr double kPoolMemoryShare = 0.5;
// More sessions than this rarely serve one box's agents better and each one is idle memory;
// --parallel sets any number (the H200 benchmark runs 32).
inline constexpr int kMaxDefaultSessions = 8;
// When the backend cannot say what is free (cudaMemGetInfo failed, or a backend without the
// report): 4 sessions of the default 32k context are ~2 GiB, well inside what a 80-140 GiB GPU
// keeps free beside the q2 weights, and 4 agents are the common case.
inline constexpr int kUnknownMemorySessions = 4;

struct PoolSizing {
  int sessions = 1;                    // the default --parallel
  uint64_t session_bytes = 0;          // KV state of one session at n_ctx
  std::optional<uint64_t> free_bytes;  // what the rule started from (after the reserve)
  uint64_t reserved_bytes = 0;         // taken off the free memory first (CPU: the model file)
  std::string reason;                  // one line for the startup log
};

// The rule: sessions = clamp(floor(kPoolMemoryShare * (free - reserved) / session_bytes), 1,
// kMaxDefaultSessions). On the CPU backend the model file is mapped and its pages count as
// reclaimable cache in the kernel's estimate (or are still to be read into memory), so its size is
// reserved first; on CUDA the weights are already on the device when free memory is measured.
PoolSizing size_pool(std::optional<uint64_t> free_bytes, uint64_t reserved_bytes,
                     uint64_t session_bytes);
PoolSizing size_pool(const Engine& engine, int n_ctx);

}  // namespace ds4::serve
