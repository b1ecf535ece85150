// src/serve/cache_policy.cpp: save points of the disk KV cache (see cache_policy.h).
#include "serve/cache_policy.h"

#include <algorithm>

namespace ds4::serve {

Status validate(const CachePolicyOptions& o) {
  if (o.min_tokens == 0) return Status::invalid_argument("--kv-cache-min-tokens must be >= 1");
  if (o.cold_max_tokens != 0 && o.cold_max_tokens < o.min_tokens) {
    return Status::invalid_argument(
        "--kv-cache-cold-max-tokens %zu must be 0 or at least --kv-cache-min-tokens %zu",
        o.cold_max_tokens, o.min_tokens);
  }
  return Status::ok();
}

size_t continued_step(const CachePolicyOptions& o) {
  if (o.continued_interval == 0) return 0;
  if (o.boundary_align == 0) return o.continued_interval;
  return (o.continued_interval + o.boundary_align - 1) / o.boundary_align * o.boundary_align;
}

size_t cold_boundary(std::span<const TokenId> prompt, TokenId user, TokenId assistant,
                     const CachePolicyOptions& o) {
  const size_t n = prompt.size();
  if (o.cold_max_tokens == 0 || n < o.min_tokens || n > o.cold_max_tokens) return 0;
  const auto first_assistant = std::find(prompt.begin(), prompt.end(), assistant);
  const auto last_user =
      std::find(std::make_reverse_iterator(first_assistant), prompt.rend(), user);
  if (last_user != prompt.rend()) {
    const size_t at = static_cast<size_t>(std::distance(prompt.begin(), last_user.base()) - 1);
    if (at >= o.min_tokens) return at;
  }
  if (n > o.boundary_trim) {
    size_t b = n - o.boundary_trim;
    if (o.boundary_align != 0) b = b / o.boundary_align * o.boundary_align;
    if (b >= o.min_tokens) return b;
  }
  return n;
}

bool continued_due(size_t n, size_t last_stored, const CachePolicyOptions& o) {
  const size_t step = continued_step(o);
  return step != 0 && n % step == 0 && n >= o.min_tokens && n > last_stored;
}

size_t next_stop(size_t from, size_t to, size_t cold, size_t last_stored,
                 const CachePolicyOptions& o) {
  size_t stop = to;
  if (cold > from && cold < stop) stop = cold;
  const size_t step = continued_step(o);
  if (step != 0) {
    size_t f = (std::max(from, last_stored) / step + 1) * step;
    while (f < o.min_tokens) f += step;
    if (f < stop) stop = f;
  }
  return stop;
}

}  // namespace ds4::serve
