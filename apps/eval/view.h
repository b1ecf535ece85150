// apps/eval/view.h: how a ds4-eval run is shown (features.md §7.5): plainly on stdout, or on the
// split screen (case list left, live tokens right) with its keys.
// Owns: the View interface the run calls, and the two views' factories.
// Does not own: the run itself (run.cpp) or the report printed after it (main.cpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "eval/question.h"
#include "eval/report.h"
#include "gen/event.h"

namespace ds4::evalapp {

class View {
 public:
  virtual ~View() = default;
  // `results` are the run's rows (kept by the run; the view reads them when it draws).
  virtual void begin(const std::vector<eval::Question>& questions,
                     const std::vector<eval::CaseResult>& results) = 0;
  virtual void case_begin(size_t i, const std::string& phase) = 0;  // phase: PREFILL, RUNNING
  virtual void output(const std::vector<gen::Event>& events, int generated) = 0;
  virtual void case_end(size_t i, double seconds) = 0;
  // What the user asked for since the last call (checked between tokens; a paused view returns
  // only once it is resumed or asked to quit or switch).
  enum class Action { kNone, kQuit, kSwitch };
  virtual Action poll(size_t* switch_to) = 0;
  virtual void end() = 0;  // before the report
};

std::unique_ptr<View> make_plain_view();
// The split screen on the terminal (stdin and stdout a TTY); `pause_ms`: the pause after each
// result. Falls back to nullptr when the terminal cannot be set up.
std::unique_ptr<View> make_split_view(int pause_ms);

}  // namespace ds4::evalapp
