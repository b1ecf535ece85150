// apps/agent/trace.cpp: the trace file's records.
#include "trace.h"

#include <cmath>

namespace ds4::agent_app {
namespace {

std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

Trace::Trace(const std::string& path) : path_(path) {
  if (!path_.empty()) file_ = std::fopen(path_.c_str(), "a");
}

Trace::~Trace() {
  if (file_) std::fclose(file_);
}

void Trace::line(nlohmann::json j) {
  if (!file_) return;
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  j["t"] = std::round(t * 1000.0) / 1000.0;
  const std::string json = dump(j);
  std::fputs(json.c_str(), file_);
  std::fputc('\n', file_);
  std::fflush(file_);
}

void Trace::prompt(std::string_view what, std::string_view text, int tokens, int ctx) {
  if (!file_) return;
  line({{"event", "prompt"}, {"what", what}, {"tokens", tokens}, {"text", text}, {"ctx", ctx}});
}

void Trace::round(int round, std::string_view raw, int tokens, const decode::Acceptance& drafts) {
  if (!file_) return;
  nlohmann::json j = {{"event", "round"}, {"round", round}, {"tokens", tokens}, {"raw", raw}};
  if (drafts.steps > 0) {
    j["mtp_steps"] = drafts.steps;
    j["mtp_drafted"] = drafts.drafted;
    j["mtp_accepted"] = drafts.accepted;
  }
  line(std::move(j));
}

void Trace::tool_calls(const std::vector<agent::ToolCall>& calls) {
  if (!file_) return;
  nlohmann::json list = nlohmann::json::array();
  for (const agent::ToolCall& c : calls) {
    nlohmann::json params = nlohmann::json::object();
    for (const agent::ToolParam& p : c.params) params[p.name] = p.value;
    list.push_back({{"name", c.name}, {"params", params}});
  }
  line({{"event", "tool_calls"}, {"calls", list}});
}

void Trace::tool_result(std::string_view text) {
  if (!file_) return;
  line({{"event", "tool_result"}, {"text", text}});
}

void Trace::approval(std::string_view reason, bool approved) {
  if (!file_) return;
  line({{"event", "approval"}, {"reason", reason}, {"approved", approved}});
}

void Trace::compaction(const Status& st, int before, int after) {
  if (!file_) return;
  line({{"event", "compaction"},
        {"ok", st.is_ok()},
        {"detail", st.message()},
        {"before", before},
        {"after", after}});
}

void Trace::note(std::string_view text, int ctx, int64_t evaluated) {
  if (!file_) return;
  line({{"event", "note"}, {"text", text}, {"ctx", ctx}, {"evaluated", evaluated}});
}

void Trace::problem(std::string_view text) {
  if (!file_) return;
  line({{"event", "problem"}, {"text", text}});
}

void Trace::ready(bool from_checkpoint, int ctx, int64_t evaluated) {
  if (!file_) return;
  line({{"event", "ready"},
        {"from_checkpoint", from_checkpoint},
        {"ctx", ctx},
        {"evaluated", evaluated}});
}

void Trace::prefill(int done, int total) {
  if (!file_) return;
  line({{"event", "prefill"}, {"done", done}, {"total", total}});
}

void Trace::first_token() {
  if (!file_) return;
  line({{"event", "first_token"}});
}

}  // namespace ds4::agent_app
