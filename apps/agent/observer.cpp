// apps/agent/observer.cpp: the turn on the terminal (or pipes) and in the trace file.
#include <nlohmann/json.hpp>

#include "agent_app.h"

namespace ds4::agent_app {
namespace {

// Tool results are shown on stderr up to this many bytes (the trace has them whole): enough for
// a person to follow, short of flooding the terminal with a file the model read.
constexpr size_t kShownResultBytes = 4096;

std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

ConsoleObserver::ConsoleObserver(FILE* out, FILE* err, const std::string& trace_path)
    : out_(out), err_(err), trace_path_(trace_path) {
  if (!trace_path_.empty()) trace_ = std::fopen(trace_path_.c_str(), "a");
}

ConsoleObserver::~ConsoleObserver() {
  if (trace_) std::fclose(trace_);
}

void ConsoleObserver::trace_line(const std::string& json_line) {
  if (!trace_) return;
  std::fputs(json_line.c_str(), trace_);
  std::fputc('\n', trace_);
  std::fflush(trace_);
}

void ConsoleObserver::end_reasoning() {
  if (!in_reasoning_) return;
  std::fputc('\n', err_);
  in_reasoning_ = false;
}

void ConsoleObserver::on_prompt(std::string_view what, std::string_view text, int tokens) {
  trace_line(dump({{"event", "prompt"}, {"what", what}, {"tokens", tokens}, {"text", text}}));
}

void ConsoleObserver::on_output(const std::vector<gen::Event>& events) {
  for (const gen::Event& e : events) {
    if (e.kind == gen::EventKind::kReasoning) {
      if (!in_reasoning_) std::fputs("[thinking] ", err_);
      in_reasoning_ = true;
      std::fwrite(e.text.data(), 1, e.text.size(), err_);
    } else if (e.kind == gen::EventKind::kText) {
      end_reasoning();
      std::fwrite(e.text.data(), 1, e.text.size(), out_);
      if (!e.text.empty()) text_open_ = e.text.back() != '\n';
    }
  }
  std::fflush(out_);
  std::fflush(err_);
}

void ConsoleObserver::on_round(int round, std::string_view raw, int tokens) {
  end_reasoning();
  if (text_open_) std::fputc('\n', out_);
  text_open_ = false;
  std::fflush(out_);
  trace_line(dump({{"event", "round"}, {"round", round}, {"tokens", tokens}, {"raw", raw}}));
}

void ConsoleObserver::on_tool_calls(const std::vector<agent::ToolCall>& calls) {
  nlohmann::json list = nlohmann::json::array();
  for (const agent::ToolCall& c : calls) {
    nlohmann::json params = nlohmann::json::object();
    std::string shown;
    for (const agent::ToolParam& p : c.params) {
      params[p.name] = p.value;
      if (p.name != "content" && p.name != "old" && p.name != "new") {
        shown += " " + p.name + "=" + p.value;
      }
    }
    std::fprintf(err_, "[tool] %s%s\n", c.name.c_str(), shown.c_str());
    list.push_back({{"name", c.name}, {"params", params}});
  }
  std::fflush(err_);
  trace_line(dump({{"event", "tool_calls"}, {"calls", list}}));
}

void ConsoleObserver::on_tool_result(std::string_view message) {
  const std::string_view shown = message.substr(0, kShownResultBytes);
  std::fprintf(err_, "%.*s%s\n", static_cast<int>(shown.size()), shown.data(),
               shown.size() < message.size() ? "\n[... shown in part]" : "");
  std::fflush(err_);
  trace_line(dump({{"event", "tool_result"}, {"text", message}}));
}

void ConsoleObserver::on_approval(std::string_view reason, bool approved) {
  std::fprintf(err_, "[%s] %.*s\n", approved ? "allowed" : "denied",
               static_cast<int>(reason.size()), reason.data());
  std::fflush(err_);
  trace_line(dump({{"event", "approval"}, {"reason", reason}, {"approved", approved}}));
}

}  // namespace ds4::agent_app
