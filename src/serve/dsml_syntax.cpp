// src/serve/dsml_syntax.cpp: the DSML structure/payload tracker.
#include "serve/dsml_syntax.h"

#include <algorithm>

namespace ds4::serve {
namespace {

constexpr std::string_view kThinkEnd = "</think>";
constexpr std::string_view kOpen = "<｜DSML｜tool_calls>";
constexpr std::string_view kClose = "</｜DSML｜tool_calls>";
constexpr std::string_view kParamOpen = "<｜DSML｜parameter";
constexpr std::string_view kParamClose = "</｜DSML｜parameter>";

// The start of a scan that may have missed a marker split across feeds.
size_t rescan_from(size_t size, std::string_view marker) {
  return size >= marker.size() ? size - marker.size() + 1 : 0;
}

}  // namespace

void DsmlSyntax::feed(std::string_view bytes) {
  text_.append(bytes);
  while (scan_once()) {
  }
}

bool DsmlSyntax::scan_once() {
  const size_t npos = std::string::npos;
  switch (state_) {
    case State::kReasoning:
    case State::kOutside: {
      const std::string_view marker = state_ == State::kReasoning ? kThinkEnd : kOpen;
      const size_t p = text_.find(marker, scan_);
      if (p == npos) {
        scan_ = std::max(scan_, rescan_from(text_.size(), marker));
        return false;
      }
      state_ = state_ == State::kReasoning ? State::kOutside : State::kStructural;
      scan_ = p + marker.size();
      return true;
    }
    case State::kStructural: {
      const size_t param = text_.find(kParamOpen, scan_);
      const size_t close = text_.find(kClose, scan_);
      if (param != npos && (close == npos || param < close)) {
        const size_t gt = text_.find('>', param);
        if (gt == npos) {
          scan_ = param;  // the tag is still arriving
          return false;
        }
        const std::string_view tag(text_.data() + param, gt - param);
        state_ = tag.find("string=\"false\"") != npos ? State::kJson : State::kStringBody;
        in_json_string_ = json_escape_ = false;
        scan_ = gt + 1;
        return true;
      }
      if (close != npos) {
        state_ = State::kDone;
        return false;
      }
      scan_ = std::max(scan_, rescan_from(text_.size(), kClose));
      return false;
    }
    case State::kStringBody: {
      const size_t p = text_.find(kParamClose, scan_);
      if (p == npos) {
        scan_ = std::max(scan_, rescan_from(text_.size(), kParamClose));
        return false;
      }
      state_ = State::kStructural;
      scan_ = p + kParamClose.size();
      return true;
    }
    case State::kJson: {
      for (size_t i = scan_; i < text_.size(); ++i) {
        const char c = text_[i];
        if (in_json_string_) {
          if (json_escape_) {
            json_escape_ = false;
          } else if (c == '\\') {
            json_escape_ = true;
          } else if (c == '"') {
            in_json_string_ = false;
          }
          continue;
        }
        if (c == '"') {
          in_json_string_ = true;
        } else if (c == '<') {
          if (text_.size() - i < kParamClose.size()) {
            scan_ = i;  // maybe the closing tag, not complete yet
            return false;
          }
          if (std::string_view(text_).substr(i, kParamClose.size()) == kParamClose) {
            state_ = State::kStructural;
            scan_ = i + kParamClose.size();
            return true;
          }
        }
      }
      scan_ = text_.size();
      return false;
    }
    case State::kDone: return false;
  }
  return false;
}

bool DsmlSyntax::greedy() const {
  switch (state_) {
    case State::kStructural: return true;
    case State::kJson: return !in_json_string_;
    case State::kStringBody: {
      // A tail that begins the closing tag (two bytes or more) is structure again.
      const std::string_view rest = std::string_view(text_).substr(scan_);
      for (size_t n = std::min(rest.size(), kParamClose.size() - 1); n >= 2; --n) {
        if (kParamClose.starts_with(rest.substr(rest.size() - n))) return true;
      }
      return false;
    }
    default: return false;
  }
}

}  // namespace ds4::serve
