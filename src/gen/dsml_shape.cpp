// src/gen/dsml_shape.cpp: the forced tool-call block's byte automaton.
#include "gen/dsml_shape.h"

namespace ds4::gen {
namespace {

constexpr std::string_view kBlockOpen = "\n\n<｜DSML｜tool_calls>\n";
constexpr std::string_view kInvokeOpen = "<｜DSML｜invoke name=\"";
constexpr std::string_view kNameEnd = "\">\n";
constexpr std::string_view kParamOpen = "<｜DSML｜parameter name=\"";
constexpr std::string_view kInvokeClose = "</｜DSML｜invoke>";
constexpr std::string_view kStringAttr = " string=\"true\">";
constexpr std::string_view kJsonAttr = " string=\"false\">";
constexpr std::string_view kParamClose = "</｜DSML｜parameter>";
constexpr std::string_view kBlockClose = "\n</｜DSML｜tool_calls>";
// The key completion() writes when it must close a parameter whose name has not started (the
// name the canonical rendering gives arguments that are not an object, features.md §2.2).
constexpr std::string_view kFallbackKey = "arguments";

// A parameter name is attribute text: no quote, no tag bracket, one line.
bool key_byte(char c) { return c != '"' && c != '<' && c != '>' && c != '\n'; }

}  // namespace

DsmlShape::DsmlShape(std::vector<std::string> names, bool one_call)
    : names_(std::move(names)), one_call_(one_call) {
  enter(Node::kBlockOpen);
}

std::vector<DsmlShape::Alt> DsmlShape::alternatives(Node node) const {
  const auto alt = [](std::string_view a, Node next) { return Alt{std::string(a), next}; };
  switch (node) {
    case Node::kBlockOpen: return {alt(kBlockOpen, Node::kInvokeOpen)};
    case Node::kInvokeOpen: return {alt(kInvokeOpen, Node::kName)};
    case Node::kName: {
      std::vector<Alt> out;
      for (const auto& n : names_) out.push_back({n + std::string(kNameEnd), Node::kElement});
      return out;
    }
    case Node::kElement:
      return {alt(kInvokeClose, Node::kAfterInvoke), alt(kParamOpen, Node::kKey)};
    case Node::kAttr: return {alt(kStringAttr, Node::kValue), alt(kJsonAttr, Node::kValue)};
    case Node::kAfterParam: return {alt("\n", Node::kElement)};
    case Node::kAfterInvoke:
      if (one_call_) return {alt(kBlockClose, Node::kDone)};
      return {alt(kBlockClose, Node::kDone),
              alt(std::string("\n") + std::string(kInvokeOpen), Node::kName)};
    default: return {};
  }
}

void DsmlShape::enter(Node node) {
  node_ = node;
  pos_ = 0;
  alts_ = alternatives(node);
}

void DsmlShape::step(char c) {
  if (node_ == Node::kDone || node_ == Node::kBroken) return;
  automaton_.feed(std::string_view(&c, 1), nullptr);
  const chat::DsmlCounts& n = automaton_.counts();
  if (n.repairs > 0 || n.text_bytes > 0) {  // a variant or stray text the canonical block lacks
    node_ = Node::kBroken;
    return;
  }
  switch (node_) {
    case Node::kDone:
    case Node::kBroken: return;
    case Node::kKey:
      if (key_byte(c)) {
        ++pos_;
      } else if (c == '"' && pos_ > 0) {
        enter(Node::kAttr);
      } else {
        node_ = Node::kBroken;
      }
      return;
    case Node::kValue: {
      // The automaton has seen c: the value goes on while it stays a payload and any closing
      // tag begun is the canonical one.
      const chat::DsmlPhase p = automaton_.phase();
      if (p != chat::DsmlPhase::kStringPayload && p != chat::DsmlPhase::kJsonPayload) {
        enter(Node::kAfterParam);
      } else if (!kParamClose.starts_with(automaton_.pending_marker())) {
        node_ = Node::kBroken;
      }
      return;
    }
    default: {
      std::vector<Alt> viable;
      for (auto& a : alts_) {
        if (pos_ < a.text.size() && a.text[pos_] == c) viable.push_back(std::move(a));
      }
      alts_ = std::move(viable);
      ++pos_;
      if (alts_.empty()) {
        node_ = Node::kBroken;
        return;
      }
      for (const auto& a : alts_) {
        if (a.text.size() == pos_) return enter(a.next);  // no alternative prefixes another
      }
      return;
    }
  }
}

bool DsmlShape::feed(std::string_view bytes) {
  for (char c : bytes) step(c);
  return !broken();
}

bool DsmlShape::accepts(std::string_view bytes) const {
  DsmlShape copy = *this;
  return copy.feed(bytes);
}

std::string DsmlShape::determined() const {
  DsmlShape s = *this;
  std::string out;
  while (!s.alts_.empty()) {
    // What every viable alternative still has in common.
    std::string common = s.alts_.front().text.substr(s.pos_);
    for (const auto& a : s.alts_) {
      size_t n = 0;
      while (n < common.size() && s.pos_ + n < a.text.size() && a.text[s.pos_ + n] == common[n]) {
        ++n;
      }
      common.resize(n);
    }
    // Between choices only the line break is forced: a tag's first bytes stay the model's, so
    // it writes "</" or "<｜DSML｜" in the tokens it knows.
    if (s.alts_.size() > 1) common.resize(common.find_last_of('\n') + 1);
    if (common.empty()) break;
    out += common;
    s.feed(common);
  }
  return out;
}

std::string DsmlShape::completion() const {
  DsmlShape s = *this;
  std::string out;
  // By value: the text often comes from s's own alternatives, which feeding replaces.
  const auto add = [&](std::string bytes) {
    out += bytes;
    s.feed(bytes);
  };
  while (!s.done() && !s.broken()) {
    if (s.node_ == Node::kKey) {
      add(s.pos_ == 0 ? std::string(kFallbackKey) + "\"" : std::string("\""));
    } else if (s.node_ == Node::kValue) {
      add(std::string(kParamClose.substr(s.automaton_.pending_marker().size())));
    } else if (!s.alts_.empty()) {
      add(s.alts_.front().text.substr(s.pos_));
    } else {
      break;  // no names to choose from (a shape for no tools never gets here)
    }
  }
  return out;
}

}  // namespace ds4::gen
