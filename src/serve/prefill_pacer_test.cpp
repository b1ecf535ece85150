// Protects: the prompt rows a step carries beside decoding requests (issue 55: a long prompt must
// not freeze the streams beside it). Simulated steps of cost a + b * rows: the quantum settles
// where a step takes the target, from either side; decode rows alone over the target leave the
// minimum; no decode rows or no target leave the whole budget; a prompt alone sets the quantum
// that fills the target; short last chunks do not raise it; prefilling requests that outnumber
// the decoding ones take the whole budget, and their steps set the quantum as a prompt alone does.
#include "serve/prefill_pacer.h"

#include <gtest/gtest.h>

namespace ds4::serve {
namespace {

// Runs `steps` paced steps of a simulated machine: `a` seconds for the decode rows, `b` per prompt
// row. Returns the pacer's quantum after them.
size_t settle(PrefillPacer& p, double a, double b, int steps, size_t budget = 2000) {
  for (int i = 0; i < steps; ++i) {
    const size_t rows = p.rows(4, 1, budget);
    p.observe(4, 1, rows, a + b * static_cast<double>(rows));
  }
  return p.quantum();
}

TEST(PrefillPacer, SettlesWhereAStepTakesTheTarget) {
  // An H200-like step: 16 ms of decode rows, 0.25 ms per prompt row; target 100 ms -> 336 rows.
  PrefillPacer up(0.100);
  EXPECT_EQ(up.quantum(), kFirstPrefillQuantum);
  EXPECT_NEAR(static_cast<double>(settle(up, 0.016, 0.00025, 40)), 336, 2);
  // A slow machine: the first quantum is far too big; it comes down to 84 rows.
  PrefillPacer down(0.100);
  EXPECT_NEAR(static_cast<double>(settle(down, 0.016, 0.001, 40)), 84, 2);
}

TEST(PrefillPacer, DecodeRowsOverTheTargetLeaveTheMinimum) {
  PrefillPacer p(0.050);
  EXPECT_EQ(settle(p, 0.080, 0.0001, 20), kMinPrefillQuantum);
  EXPECT_EQ(p.rows(4, 1, 2000), kMinPrefillQuantum);
  EXPECT_EQ(p.rows(4, 1, 10), 10u);  // never past the step's budget
}

TEST(PrefillPacer, NothingDecodingOrNoTargetTakesTheWholeBudget) {
  PrefillPacer p(0.100);
  EXPECT_EQ(p.rows(0, 0, 2000), 2000u);
  PrefillPacer off(0);
  EXPECT_EQ(off.rows(8, 1, 1500), 1500u);
  off.observe(8, 1, 1500, 9.0);
  EXPECT_EQ(off.rows(8, 1, 1500), 1500u);
}

TEST(PrefillPacer, APromptAloneSetsTheQuantumThatFillsTheTarget) {
  // 1,000 rows alone in 2.5 s (a slow CPU): 40 rows fill 100 ms, below the minimum.
  PrefillPacer slow(0.100);
  slow.observe(0, 0, 1000, 2.5);
  EXPECT_EQ(slow.quantum(), kMinPrefillQuantum);
  // 2,048 rows in 0.5 s: 409.6 rows fill 100 ms; then the paced steps beside 16 ms of decode rows
  // bring it down to 336 (the SettlesWhereAStepTakesTheTarget machine).
  PrefillPacer fast(0.100);
  fast.observe(0, 0, 2048, 0.5);
  EXPECT_EQ(fast.quantum(), 409u);
  EXPECT_NEAR(static_cast<double>(settle(fast, 0.016, 0.00025, 40)), 336, 2);
  // A short prompt alone says nothing.
  PrefillPacer p(0.100);
  p.observe(0, 0, kMinPrefillQuantum - 1, 10.0);
  EXPECT_EQ(p.quantum(), kFirstPrefillQuantum);
}

TEST(PrefillPacer, OneMeasurementMovesTheQuantumByTwoAtMost) {
  PrefillPacer p(0.100);
  p.observe(4, 1, kFirstPrefillQuantum, 0.001);  // 100x under the target
  EXPECT_EQ(p.quantum(), 2 * kFirstPrefillQuantum);
  p.observe(4, 1, 2 * kFirstPrefillQuantum, 10.0);  // 100x over
  EXPECT_EQ(p.quantum(), kFirstPrefillQuantum);
}

TEST(PrefillPacer, AShortLastChunkDoesNotRaiseTheQuantum) {
  PrefillPacer p(0.100);
  p.observe(4, 1, 10, 0.020);  // a prompt's last 10 rows: fast, but says nothing of a full quantum
  EXPECT_EQ(p.quantum(), kFirstPrefillQuantum);
  p.observe(4, 1, 0, 0.020);  // no prompt rows: nothing to learn
  EXPECT_EQ(p.quantum(), kFirstPrefillQuantum);
  p.observe(4, 1, 200, 0.400);  // a slow short chunk does lower it: 200 rows took 4x the target
  EXPECT_EQ(p.quantum(), 100u);
}

// A burst of new requests (issue 55: 16 clients at once): while the requests still prefilling
// outnumber the decoding ones, the step carries the whole budget; from as many decoding as
// prefilling on it is paced. The unpaced steps set the quantum from their prompt rows' time.
TEST(PrefillPacer, PrefillingRequestsThatOutnumberTheDecodingOnesTakeTheWholeBudget) {
  PrefillPacer p(0.100);
  EXPECT_FALSE(p.paces(1, 15));
  EXPECT_EQ(p.rows(1, 15, 2047), 2047u);
  EXPECT_EQ(p.rows(4, 5, 2000), 2000u);
  EXPECT_TRUE(p.paces(8, 8));
  EXPECT_EQ(p.rows(8, 8, 2000), kFirstPrefillQuantum);
  EXPECT_EQ(p.rows(4, 1, 2000), kFirstPrefillQuantum);  // the long prompt beside 4 streams
  EXPECT_FALSE(p.paces(0, 1));
  // 2,047 prompt rows beside 1 decode row in 0.42 s: 487.4 rows fill 100 ms.
  p.observe(1, 15, 2047, 0.42);
  EXPECT_EQ(p.quantum(), 487u);
  // A paced step moves it as before: 487 rows in 0.2 s halve it.
  p.observe(8, 8, 487, 0.2);
  EXPECT_EQ(p.quantum(), 244u);
  PrefillPacer off(0);
  EXPECT_FALSE(off.paces(8, 1));
}

}  // namespace
}  // namespace ds4::serve
