// apps/eval/plain_view.cpp: --plain (and any run without a terminal): `[i/N] source/domain title`,
// the case's text as it streams (reasoning grey on a terminal, a newline where it ends), then
// `PASSED|FAIL got X expected Y (T s, N tokens)` or the state it ended in (features.md §7.5).
#include <unistd.h>

#include <cstdio>

#include "view.h"

namespace ds4::evalapp {
namespace {

constexpr const char* kGrey = "\x1b[90m";
constexpr const char* kReset = "\x1b[0m";

class PlainView : public View {
 public:
  PlainView() : color_(isatty(fileno(stdout)) != 0) {}

  void begin(const std::vector<eval::Question>& questions,
             const std::vector<eval::CaseResult>& results) override {
    questions_ = &questions;
    results_ = &results;
  }
  void case_begin(size_t i, const std::string&) override {
    if (shown_ == static_cast<ptrdiff_t>(i)) return;  // PREFILL, then RUNNING
    shown_ = static_cast<ptrdiff_t>(i);
    const eval::Question& q = (*questions_)[i];
    std::printf("[%zu/%zu] %s/%s %s\n", i + 1, questions_->size(), q.source.c_str(),
                q.domain.c_str(), q.title.c_str());
    std::fflush(stdout);
  }
  void output(const std::vector<gen::Event>& events, int) override {
    for (const gen::Event& e : events) {
      const bool reasoning = e.kind == gen::EventKind::kReasoning;
      if (!reasoning && e.kind != gen::EventKind::kText) continue;
      if (reasoning != reasoning_) {
        if (color_) std::fputs(reasoning ? kGrey : kReset, stdout);
        if (!reasoning) std::fputc('\n', stdout);
        reasoning_ = reasoning;
      }
      std::fwrite(e.text.data(), 1, e.text.size(), stdout);
    }
    std::fflush(stdout);
  }
  void case_end(size_t i, double seconds) override {
    if (reasoning_ && color_) std::fputs(kReset, stdout);
    reasoning_ = false;
    const eval::CaseResult& r = (*results_)[i];
    if (r.state != "SKIPPED") std::fputc('\n', stdout);
    if (r.state == "PASSED" || r.state == "FAILED") {
      std::printf("%s got %s expected %s (%.1f s, %lld tokens)\n",
                  r.state == "PASSED" ? "PASSED" : "FAIL", r.given.c_str(), r.correct.c_str(),
                  seconds, static_cast<long long>(r.generated_tokens));
    } else {
      std::printf("%s\n", r.state.c_str());
    }
    std::fflush(stdout);
    shown_ = -1;
  }
  Action poll(size_t*) override { return Action::kNone; }
  void end() override {}

 private:
  bool color_;
  bool reasoning_ = false;
  ptrdiff_t shown_ = -1;
  const std::vector<eval::Question>* questions_ = nullptr;
  const std::vector<eval::CaseResult>* results_ = nullptr;
};

}  // namespace

std::unique_ptr<View> make_plain_view() { return std::make_unique<PlainView>(); }

}  // namespace ds4::evalapp
