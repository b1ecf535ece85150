// apps/agent/trace.h: the --trace file of ds4-agent: one JSON object per line, appended, flushed
// after each, so a test or a person can follow a session while it runs.
// Owns: the file and the record of each event: prompts (what the model did not generate), rounds
// (raw output), tool calls and results, approvals, compactions, notes and problems, with the
// context used and the tokens the engine evaluated so far; the session ready, prefill progress
// and each round's first token, for timing: every line carries "t", seconds since the trace
// opened (a steady clock). Does not own: what is shown (the front-ends).
#pragma once

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "agent/dispatch.h"
#include "decode/decoder.h"
#include "ds4/status.h"

namespace ds4::agent_app {

class Trace {
 public:
  explicit Trace(const std::string& path);  // empty: no file, every call does nothing
  ~Trace();
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;
  bool ok() const { return file_ != nullptr || path_.empty(); }

  void prompt(std::string_view what, std::string_view text, int tokens, int ctx);
  // `drafts`: its MTP drafts, recorded when it drafted (mtp_steps, mtp_drafted, mtp_accepted).
  void round(int round, std::string_view raw, int tokens, const decode::Acceptance& drafts);
  void tool_calls(const std::vector<agent::ToolCall>& calls);
  void tool_result(std::string_view text);
  void approval(std::string_view reason, bool approved);
  void compaction(const Status& st, int before, int after);
  void note(std::string_view text, int ctx, int64_t evaluated);
  void problem(std::string_view text);
  void ready(bool from_checkpoint, int ctx, int64_t evaluated);
  void prefill(int done, int total);
  void first_token();

 private:
  void line(nlohmann::json j);

  std::string path_;
  FILE* file_ = nullptr;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace ds4::agent_app
