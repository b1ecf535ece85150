// Protects: the disk KV cache's save points (features.md §3.3-3.4): the knobs' validation, the
// continued step (the interval rounded up to the alignment), the cold boundary (before the final
// user task, else trimmed and aligned down, else the whole prompt; none outside [min, cold max]),
// continued frontiers only beyond what is stored, and prefill chunks cut at the next save point.
#include "serve/cache_policy.h"

#include <gtest/gtest.h>

#include <vector>

namespace ds4::serve {
namespace {

constexpr TokenId kUser = 900, kAssistant = 901, kText = 5;

// `n` tokens: BOS-like text, with a user token at each position of `users` and an assistant
// token at each position of `assistants`.
std::vector<TokenId> prompt(size_t n, std::vector<size_t> users, std::vector<size_t> assistants) {
  std::vector<TokenId> p(n, kText);
  for (size_t u : users) p[u] = kUser;
  for (size_t a : assistants) p[a] = kAssistant;
  return p;
}

TEST(CachePolicy, DefaultsAreDs4s) {
  const CachePolicyOptions o;
  EXPECT_EQ(o.min_tokens, 512u);
  EXPECT_EQ(o.cold_max_tokens, 30000u);
  EXPECT_EQ(o.continued_interval, 10000u);
  EXPECT_EQ(o.boundary_trim, 32u);
  EXPECT_EQ(o.boundary_align, 2048u);
  EXPECT_TRUE(validate(o).is_ok());
}

TEST(CachePolicy, ColdMaxMustBeZeroOrAtLeastMin) {
  EXPECT_FALSE(validate({.min_tokens = 512, .cold_max_tokens = 100}).is_ok());
  EXPECT_TRUE(validate({.min_tokens = 512, .cold_max_tokens = 0}).is_ok());
  EXPECT_TRUE(validate({.min_tokens = 512, .cold_max_tokens = 512}).is_ok());
  EXPECT_FALSE(validate({.min_tokens = 0}).is_ok());
}

TEST(CachePolicy, ContinuedStepRoundsTheIntervalUpToTheAlignment) {
  EXPECT_EQ(continued_step({}), 10240u);  // 10000 -> 5 x 2048
  EXPECT_EQ(continued_step({.continued_interval = 4096, .boundary_align = 2048}), 4096u);
  EXPECT_EQ(continued_step({.continued_interval = 100, .boundary_align = 0}), 100u);
  EXPECT_EQ(continued_step({.continued_interval = 0}), 0u);
}

TEST(CachePolicy, ColdBoundaryIsBeforeTheFinalUserTask) {
  const CachePolicyOptions o;
  // system prompt of 5000 tokens, then the user turn, then the assistant prefix.
  const auto p = prompt(6000, {5000}, {5990});
  EXPECT_EQ(cold_boundary(p, kUser, kAssistant, o), 5000u);
  // Several user tokens before the first assistant: the last of them.
  const auto q = prompt(6000, {700, 5000}, {5990});
  EXPECT_EQ(cold_boundary(q, kUser, kAssistant, o), 5000u);
  // Only users after the first assistant do not count.
  const auto r = prompt(6000, {3000, 5995}, {5000});
  EXPECT_EQ(cold_boundary(r, kUser, kAssistant, o), 3000u);
}

TEST(CachePolicy, ColdBoundaryFallsBackToTrimmedAndAligned) {
  const CachePolicyOptions o;
  // The user token is below the minimum: 6000 - 32 = 5968, aligned down to 4096.
  EXPECT_EQ(cold_boundary(prompt(6000, {100}, {5990}), kUser, kAssistant, o), 4096u);
  // No user token at all.
  EXPECT_EQ(cold_boundary(prompt(6000, {}, {}), kUser, kAssistant, o), 4096u);
  // Trimmed and aligned is below the minimum: the whole prompt.
  EXPECT_EQ(cold_boundary(prompt(2000, {}, {}), kUser, kAssistant, o), 2000u);
  // Alignment off: just the trim.
  CachePolicyOptions na = o;
  na.boundary_align = 0;
  EXPECT_EQ(cold_boundary(prompt(2000, {}, {}), kUser, kAssistant, na), 1968u);
}

TEST(CachePolicy, NoColdSaveOutsideTheWindow) {
  const CachePolicyOptions o;
  EXPECT_EQ(cold_boundary(prompt(511, {}, {}), kUser, kAssistant, o), 0u);
  EXPECT_EQ(cold_boundary(prompt(30001, {}, {}), kUser, kAssistant, o), 0u);
  EXPECT_EQ(cold_boundary(prompt(30000, {}, {}), kUser, kAssistant, o), 28672u);
  CachePolicyOptions off = o;
  off.cold_max_tokens = 0;
  EXPECT_EQ(cold_boundary(prompt(6000, {5000}, {5990}), kUser, kAssistant, off), 0u);
}

TEST(CachePolicy, ContinuedFrontiersOnlyBeyondWhatIsStored) {
  const CachePolicyOptions o;
  EXPECT_TRUE(continued_due(10240, 0, o));
  EXPECT_FALSE(continued_due(10241, 0, o));
  EXPECT_FALSE(continued_due(10240, 10240, o));  // already stored (a cold save landed there)
  EXPECT_TRUE(continued_due(20480, 10240, o));
  EXPECT_FALSE(continued_due(0, 0, o));
  // A step below the minimum is not worth a save.
  const CachePolicyOptions small{.min_tokens = 512, .continued_interval = 256, .boundary_align = 0};
  EXPECT_FALSE(continued_due(256, 0, small));
  EXPECT_TRUE(continued_due(512, 0, small));
  EXPECT_FALSE(continued_due(10240, 0, {.continued_interval = 0}));
}

TEST(CachePolicy, ChunksStopAtTheNextSavePoint) {
  const CachePolicyOptions o;
  EXPECT_EQ(next_stop(0, 2048, 0, 0, o), 2048u);           // nothing due in the chunk
  EXPECT_EQ(next_stop(0, 2048, 1500, 0, o), 1500u);        // the cold boundary
  EXPECT_EQ(next_stop(1500, 3548, 1500, 0, o), 3548u);     // a boundary already passed
  EXPECT_EQ(next_stop(9000, 11048, 0, 0, o), 10240u);      // a continued frontier
  EXPECT_EQ(next_stop(9000, 11048, 0, 10240, o), 11048u);  // ... already stored
  EXPECT_EQ(next_stop(10240, 12288, 0, 0, o), 12288u);     // standing on one: the next is 20480
  const CachePolicyOptions small{.min_tokens = 512, .continued_interval = 256, .boundary_align = 0};
  EXPECT_EQ(next_stop(0, 1000, 0, 0, small), 512u);  // frontiers below the minimum are skipped
}

}  // namespace
}  // namespace ds4::serve
