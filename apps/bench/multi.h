// apps/bench/multi.h: the multi-session decode mode of ds4-bench (`--sessions`), and the greedy
// pick both modes share.
#pragma once

#include <cstdio>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ds4/engine.h"
#include "ds4/session.h"

namespace ds4bench {

struct MultiOptions {
  std::vector<int> sessions;  // session counts to measure, in order
  int position = 2048;        // tokens prefilled into every session (BOS included)
  int stride = 1024;          // session i's text starts stride * i tokens into the text
  int gen_tokens = 64;        // steps decoded per session count
  int ctx = 0;                // each session's context
  int prefill_chunk = 0;
  bool op_times = false;
  // --spec-replay K[,K..] with --sessions: after the plain steps, every session decodes its probe
  // again from a snapshot, K of its own tokens verified per session in each step (one
  // Engine::step of N verifications: issue 51's batched verification at acceptance 100%).
  std::vector<int> spec_replay;
  std::function<int(const std::string&, const ds4::Status&)> fail;  // prints, returns exit code
};

// Greedy over every token but EOS, so a probe always decodes the same number of tokens.
ds4::TokenId greedy_no_eos(std::span<const float> logits, ds4::TokenId eos);

// One CSV row per session count. `body` holds the text's tokens (no BOS), at least
// stride * (max sessions - 1) + position tokens. Returns the process exit code.
int run_sessions(ds4::Engine& e, const std::vector<ds4::TokenId>& body, ds4::TokenId bos,
                 ds4::TokenId eos, const MultiOptions& o, FILE* csv);

}  // namespace ds4bench
