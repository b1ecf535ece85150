// src/agent/edit_watch.cpp: an edit call followed as it streams.
#include "agent/edit_watch.h"

#include "agent/edit.h"

namespace ds4::agent {

EditWatch::EditWatch(const Workspace& ws, bool thinking)
    : ws_(ws), automaton_(chat::DsmlOptions{.thinking = thinking, .tool_calls = true}) {}

EditWatch::Action EditWatch::feed(std::string_view bytes) {
  pending_ = {};
  automaton_.feed(bytes, this);
  // Checked on whole pieces: `old` ends with a line break at the end of a generated token.
  if (pending_.preflight.empty() && old_open_ && !forced_ && path_done_ &&
      upto_prefix_ready(ws_, path_, old_)) {
    forced_ = true;
    pending_.force = std::string(kUptoMarker) + "\n";
  }
  return std::move(pending_);
}

void EditWatch::on_dsml(const chat::DsmlEvent& e) {
  using K = chat::DsmlEventKind;
  switch (e.kind) {
    case K::kCallOpen:
      call_ = std::string(e.bytes);
      path_.clear();
      path_done_ = false;
      old_.clear();
      forced_ = false;
      break;
    case K::kParamOpen:
      param_ = std::string(e.bytes);
      if (call_ == "edit" && param_ == "path") path_.clear();
      old_open_ = call_ == "edit" && param_ == "old";
      if (old_open_) old_.clear();
      break;
    case K::kPayload:
      if (call_ != "edit") break;
      if (param_ == "path") path_ += e.bytes;
      if (old_open_) old_ += e.bytes;
      break;
    case K::kParamClose:
      if (call_ == "edit" && param_ == "path") path_done_ = true;
      if (old_open_ && path_done_ && pending_.preflight.empty()) {
        if (Status st = edit_preflight(ws_, path_, old_); !st.is_ok()) {
          pending_.preflight = st.message();
        }
      }
      old_open_ = false;
      param_.clear();
      break;
    case K::kCallClose:
      call_.clear();
      old_open_ = false;
      break;
    default: break;
  }
}

std::string preflight_result(std::string_view error) {
  return "Tool result 1 (edit):\nTool error: " + std::string(error) +
         "\n(The edit was checked as soon as its old text was complete and stopped there: "
         "nothing was changed. Read the file again and retry with an old text that matches "
         "exactly once.)";
}

}  // namespace ds4::agent
