// apps/loadgen/stats.h: what ds4-loadgen computes from its streams' timestamps (issue 55): the
// percentiles, the decode-phase aggregate (tokens per second while every client is decoding, so
// prefill does not dilute it) and the inter-token gaps that overlap a time window (the decoding
// streams' gaps while a long prompt is prefilled beside them).
// Owns: arithmetic on times (seconds on one steady clock). Does not own: requests or output.
#pragma once

#include <vector>

namespace ds4::loadgen {

// One request's decode phase: its token deltas' times, the first one opening the phase, and the
// time the stream ended.
struct DecodeTimes {
  std::vector<double> tokens;  // each token delta's time, in order; empty: it never decoded
  double end = 0;
};

// Nearest-rank percentile of `v` (p in [0, 100]); 0 for no values.
double percentile(std::vector<double> v, double p);

struct DecodePhase {
  double seconds = 0;  // time during which `streams` phases were open at once
  long tokens = 0;     // token deltas (not a phase's first) inside that time
  double tokens_per_s() const { return seconds > 0 ? tokens / seconds : 0; }
};

// The time during which `streams` decode phases (one per client; a client's requests run one
// after another) are open at once, and the tokens delivered inside it. A phase runs from its first
// token to its end. Zero seconds when the clients never all decoded together.
DecodePhase decode_phase(const std::vector<DecodeTimes>& phases, int streams);

// The gaps between consecutive tokens of `phases` that overlap [from, to] (a stream frozen for
// the whole window is one gap that starts before it and ends after it).
std::vector<double> gaps_within(const std::vector<DecodeTimes>& phases, double from, double to);

}  // namespace ds4::loadgen
