// apps/agent/tui_frontend.cpp: worker reports as UI events.
#include "tui_frontend.h"

#include <unistd.h>

namespace ds4::agent_app {
namespace {

// Lines of an edit's old / new text and of a written file shown with the call, and of a tool
// result (the model reads them whole; the trace has them whole).
constexpr int kShownBodyLines = 12;
constexpr int kShownResultLines = 8;

// The first `n` lines of `text`, each after `prefix`, then how many more there were.
std::string first_lines(std::string_view text, int n, std::string_view prefix) {
  std::string out;
  size_t at = 0;
  int shown = 0, total = 0;
  while (at < text.size()) {
    const size_t nl = std::min(text.find('\n', at), text.size());
    if (shown < n) {
      out += std::string(prefix) + std::string(text.substr(at, nl - at)) + "\n";
      ++shown;
    }
    ++total;
    at = nl + 1;
  }
  if (total > shown) {
    out += std::string(prefix) + "... (" + std::to_string(total - shown) + " more lines)\n";
  }
  return out;
}

}  // namespace

TuiFrontend::TuiFrontend(int wake_fd, const std::string& trace_path, Approval approval)
    : wake_fd_(wake_fd), approval_(approval), trace_(trace_path) {}

TuiFrontend::~TuiFrontend() = default;

void TuiFrontend::push(UiEvent e) {
  e.ctx = ctx_used();
  {
    std::lock_guard lock(mu_);
    events_.push_back(std::move(e));
  }
  const char b = 1;
  // A full pipe already wakes the UI; nothing to do when the write fails.
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &b, 1);
}

std::vector<UiEvent> TuiFrontend::take() {
  std::lock_guard lock(mu_);
  std::vector<UiEvent> out(std::make_move_iterator(events_.begin()),
                           std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

bool TuiFrontend::ask(std::string question) {
  {
    std::lock_guard lock(mu_);
    if (closed_) return false;
    asking_ = true;
    answer_.reset();
  }
  push({.kind = UiEvent::Kind::kQuestion, .text = std::move(question)});
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return answer_.has_value() || closed_; });
  asking_ = false;
  return answer_.value_or(false);
}

void TuiFrontend::answer(bool yes) {
  std::lock_guard lock(mu_);
  if (!asking_) return;
  answer_ = yes;
  cv_.notify_all();
}

void TuiFrontend::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

void TuiFrontend::on_prompt(std::string_view what, std::string_view text, int tokens) {
  trace_.prompt(what, text, tokens, ctx_used());
  push({.kind = UiEvent::Kind::kPrompt, .text = std::string(what), .a = tokens});
}

void TuiFrontend::ready(bool from_checkpoint) {
  trace_.ready(from_checkpoint, ctx_used(), evaluated());
}

void TuiFrontend::on_prefill(int done, int total) {
  trace_.prefill(done, total);
  push({.kind = UiEvent::Kind::kPrefill, .a = done, .b = total});
}

void TuiFrontend::on_output(const std::vector<gen::Event>& events) {
  for (const gen::Event& e : events) {
    switch (e.kind) {
      case gen::EventKind::kReasoning:
        push({.kind = UiEvent::Kind::kReasoning, .text = e.text});
        break;
      case gen::EventKind::kText: push({.kind = UiEvent::Kind::kText, .text = e.text}); break;
      case gen::EventKind::kToolCallBegin:
        push({.kind = UiEvent::Kind::kCallBegin, .text = e.text});
        break;
      default: break;
    }
  }
}

void TuiFrontend::on_token(int generated, bool greedy) {
  if (generated == 1) trace_.first_token();
  push({.kind = UiEvent::Kind::kToken, .a = generated, .flag = greedy});
}

void TuiFrontend::on_round(int round, std::string_view raw, int tokens,
                           const decode::Acceptance& drafts) {
  trace_.round(round, raw, tokens, drafts);
  push({.kind = UiEvent::Kind::kRoundEnd});
}

void TuiFrontend::on_tool_calls(const std::vector<agent::ToolCall>& calls) {
  trace_.tool_calls(calls);
  std::string out;
  for (const agent::ToolCall& c : calls) {
    std::string head = "● " + c.name;
    std::string bodies;
    for (const agent::ToolParam& p : c.params) {
      if (p.name == "old") {
        bodies += first_lines(p.value, kShownBodyLines, "- ");
      } else if (p.name == "new") {
        bodies += first_lines(p.value, kShownBodyLines, "+ ");
      } else if (p.name == "content") {
        bodies += first_lines(p.value, kShownBodyLines, "| ");
      } else {
        head += " " + p.name + "=" + p.value;
      }
    }
    out += head + "\n" + bodies;
  }
  push({.kind = UiEvent::Kind::kToolCalls, .text = std::move(out)});
}

void TuiFrontend::on_tool_result(std::string_view message) {
  trace_.tool_result(message);
  push({.kind = UiEvent::Kind::kToolResult, .text = first_lines(message, kShownResultLines, "")});
}

void TuiFrontend::on_compaction_begin(int used) {
  push({.kind = UiEvent::Kind::kCompactBegin, .a = used});
}

void TuiFrontend::on_summary(std::string_view text) {
  push({.kind = UiEvent::Kind::kSummary, .text = std::string(text)});
}

void TuiFrontend::on_compaction_end(const Status& st, int before, int after) {
  trace_.compaction(st, before, after);
  push({.kind = UiEvent::Kind::kCompactEnd,
        .text = st.message(),
        .a = before,
        .b = after,
        .flag = st.is_ok()});
}

void TuiFrontend::on_prefill_interrupted(int kept, int total) {
  push({.kind = UiEvent::Kind::kPrefillCut, .a = kept, .b = total});
}

void TuiFrontend::note(std::string_view text) {
  trace_.note(text, ctx_used(), evaluated());
  push({.kind = UiEvent::Kind::kNote, .text = std::string(text)});
}

void TuiFrontend::problem(std::string_view text, bool fatal) {
  trace_.problem(text);
  push({.kind = UiEvent::Kind::kProblem, .text = std::string(text), .flag = fatal});
}

bool TuiFrontend::approve(const agent::ToolCall&, std::string_view reason) {
  bool ok = approval_ == Approval::kYolo;
  if (approval_ == Approval::kAsk) ok = ask("allow: " + std::string(reason) + "?");
  trace_.approval(reason, ok);
  return ok;
}

bool TuiFrontend::confirm(std::string_view question) { return ask(std::string(question)); }

void TuiFrontend::idle() { push({.kind = UiEvent::Kind::kIdle}); }

void TuiFrontend::saving() { push({.kind = UiEvent::Kind::kSaving}); }

void TuiFrontend::sessions(std::vector<std::string> ids) {
  push({.kind = UiEvent::Kind::kSessions, .ids = std::move(ids)});
}

void TuiFrontend::quit() { push({.kind = UiEvent::Kind::kQuit}); }

}  // namespace ds4::agent_app
