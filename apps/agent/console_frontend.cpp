// apps/agent/console_frontend.cpp: the turn on pipes and in the trace file.
#include "console_frontend.h"

namespace ds4::agent_app {
namespace {

// Tool results are shown on stderr up to this many bytes (the trace has them whole): enough for
// a person to follow, short of flooding the terminal with a file the model read.
constexpr size_t kShownResultBytes = 4096;

}  // namespace

ConsoleFrontend::ConsoleFrontend(FILE* out, FILE* err, const std::string& trace_path,
                                 Approval approval)
    : out_(out), err_(err), approval_(approval), trace_(trace_path) {}

ConsoleFrontend::~ConsoleFrontend() = default;

void ConsoleFrontend::end_reasoning() {
  if (!in_reasoning_) return;
  std::fputc('\n', err_);
  in_reasoning_ = false;
}

void ConsoleFrontend::on_prompt(std::string_view what, std::string_view text, int tokens) {
  trace_.prompt(what, text, tokens, ctx_used());
}

void ConsoleFrontend::on_prefill(int done, int total) { trace_.prefill(done, total); }

void ConsoleFrontend::on_token(int generated, bool) {
  if (generated == 1) trace_.first_token();
}

void ConsoleFrontend::ready(bool from_checkpoint) {
  trace_.ready(from_checkpoint, ctx_used(), evaluated());
}

void ConsoleFrontend::on_output(const std::vector<gen::Event>& events) {
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

void ConsoleFrontend::on_round(int round, std::string_view raw, int tokens,
                               const decode::Acceptance& drafts) {
  end_reasoning();
  if (text_open_) std::fputc('\n', out_);
  text_open_ = false;
  std::fflush(out_);
  trace_.round(round, raw, tokens, drafts);
}

void ConsoleFrontend::on_tool_calls(const std::vector<agent::ToolCall>& calls) {
  for (const agent::ToolCall& c : calls) {
    std::string shown;
    for (const agent::ToolParam& p : c.params) {
      if (p.name != "content" && p.name != "old" && p.name != "new") {
        shown += " " + p.name + "=" + p.value;
      }
    }
    std::fprintf(err_, "[tool] %s%s\n", c.name.c_str(), shown.c_str());
  }
  std::fflush(err_);
  trace_.tool_calls(calls);
}

void ConsoleFrontend::on_tool_result(std::string_view message) {
  const std::string_view shown = message.substr(0, kShownResultBytes);
  std::fprintf(err_, "%.*s%s\n", static_cast<int>(shown.size()), shown.data(),
               shown.size() < message.size() ? "\n[... shown in part]" : "");
  std::fflush(err_);
  trace_.tool_result(message);
}

bool ConsoleFrontend::approve(const agent::ToolCall&, std::string_view reason) {
  const bool approved = approval_ == Approval::kYolo;
  std::fprintf(err_, "[%s] %.*s\n", approved ? "allowed" : "denied",
               static_cast<int>(reason.size()), reason.data());
  std::fflush(err_);
  trace_.approval(reason, approved);
  return approved;
}

void ConsoleFrontend::on_compaction_begin(int used) {
  end_reasoning();
  std::fprintf(err_, "[compacting] %d tokens\n", used);
  std::fflush(err_);
}

void ConsoleFrontend::on_summary(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), err_);
  std::fflush(err_);
}

void ConsoleFrontend::on_compaction_end(const Status& st, int before, int after) {
  if (st.is_ok()) {
    std::fprintf(err_, "\n[compacted] %d -> %d tokens\n", before, after);
  } else {
    std::fprintf(err_, "\n[compaction failed] %s (the conversation is kept as it was)\n",
                 st.message().c_str());
  }
  std::fflush(err_);
  trace_.compaction(st, before, after);
}

void ConsoleFrontend::on_prefill_interrupted(int kept, int total) {
  std::fprintf(err_, "[interrupted] the model saw %d of the %d tokens\n", kept, total);
  std::fflush(err_);
}

void ConsoleFrontend::note(std::string_view text) {
  std::fprintf(out_, "%.*s\n", static_cast<int>(text.size()), text.data());
  std::fflush(out_);
  trace_.note(text, ctx_used(), evaluated());
}

void ConsoleFrontend::problem(std::string_view text, bool) {
  std::fprintf(err_, "ds4-agent: %.*s\n", static_cast<int>(text.size()), text.data());
  std::fflush(err_);
  trace_.problem(text);
}

void ConsoleFrontend::saving() {
  std::fprintf(err_, "[saving session]\n");
  std::fflush(err_);
}

}  // namespace ds4::agent_app
