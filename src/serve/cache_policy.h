// src/serve/cache_policy.h: when the disk KV cache saves a checkpoint (features.md §3.3, §3.4).
// Owns: the knobs and their defaults, their validation, and the arithmetic of the save points --
// the cold boundary (everything before the final user task, else the prompt trimmed and aligned
// down) and the continued frontiers (multiples of the interval rounded up to the alignment).
// Pure functions of token positions: the scheduler asks them where to stop a prefill chunk and
// whether the live length is a save point. Does not own: files (disk_cache.h) or sessions.
#pragma once

#include <cstddef>
#include <span>

#include "ds4/status.h"
#include "ds4/types.h"

namespace ds4::serve {

struct CachePolicyOptions {
  size_t min_tokens = 512;            // --kv-cache-min-tokens: no save or load below it
  size_t cold_max_tokens = 30000;     // --kv-cache-cold-max-tokens: 0 disables cold saves
  size_t continued_interval = 10000;  // --kv-cache-continued-interval-tokens: 0 disables
  size_t boundary_trim = 32;          // --kv-cache-boundary-trim-tokens
  size_t boundary_align = 2048;       // --kv-cache-boundary-align-tokens: 0 disables alignment
};

// Errors: cold_max_tokens neither 0 nor >= min_tokens (§1.16), min_tokens 0.
Status validate(const CachePolicyOptions& o);

// The spacing of continued saves: the interval rounded up to a multiple of the alignment
// (10000 -> 10240 with 2048); 0 when continued saves are off.
size_t continued_step(const CachePolicyOptions& o);

// Where a cold save stops in `prompt` (a miss: nothing was reused), or 0 for no cold save. The
// prompt must be within [min, cold_max]. The boundary is the position of the last `user` token
// before the first `assistant` token when that is >= min; else the length minus the trim,
// aligned down, when that is >= min; else the whole prompt.
size_t cold_boundary(std::span<const TokenId> prompt, TokenId user, TokenId assistant,
                     const CachePolicyOptions& o);

// True when a session of `n` tokens stands on a continued frontier that is worth a save:
// a multiple of the step, >= min, and beyond `last_stored` (the highest frontier already saved
// or loaded for this session).
bool continued_due(size_t n, size_t last_stored, const CachePolicyOptions& o);

// The first save point in (from, to]: the cold boundary `cold` (0: none) or a continued frontier
// beyond `last_stored`; `to` when there is none. A prefill chunk ends there, so that the session
// stands exactly on the point when it is saved (the graph only moves forward).
size_t next_stop(size_t from, size_t to, size_t cold, size_t last_stored,
                 const CachePolicyOptions& o);

}  // namespace ds4::serve
