// src/gen/dsml_shape.h: the shape a forced tool-call block must keep, as a byte automaton, so
// the server can write the structure a tool_choice demands and let the model fill in the rest.
// Owns: the canonical DSML layout of chat-format.md ("\n\n<｜DSML｜tool_calls>\n", invokes of the
// allowed names, parameters with a name and string="true|false", "</｜DSML｜tool_calls>"), which
// bytes may continue it, the text that is the only way on (forced), and the shortest text that
// closes the block from wherever it stands.
// Reads through the DSML automaton (chat/dsml_automaton.h), fed the same bytes: a value ends
// where the automaton ends it (the escape honoured), and anything the automaton would repair or
// report as text breaks the shape, so the shape and the output parser never disagree.
// Does not own: recognising DSML (the automaton), parsing calls out of the text
// (chat::OutputParser), tokens (OutputForcing).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/dsml_automaton.h"

namespace ds4::gen {

class DsmlShape {
 public:
  // names: the tools an invoke may name (non-empty); one_call: a single invoke, then the block
  // closes (a named tool choice, or parallel calls disabled).
  DsmlShape(std::vector<std::string> names, bool one_call);

  // Consumes bytes; false when they broke the shape (it then stays broken and accepts nothing).
  bool feed(std::string_view bytes);
  // Whether feed(bytes) would keep the shape.
  bool accepts(std::string_view bytes) const;
  bool done() const { return node_ == Node::kDone; }
  bool broken() const { return node_ == Node::kBroken; }
  // The bytes every continuation must start with (empty where the model has a choice next).
  std::string determined() const;
  // The shortest bytes from here to the end of the block (empty when done or broken).
  std::string completion() const;

 private:
  enum class Node {
    kBlockOpen,    // literal "\n\n<｜DSML｜tool_calls>\n"
    kInvokeOpen,   // literal "<｜DSML｜invoke name=\""
    kName,         // one of the names, then "\">\n"
    kElement,      // a parameter tag or the invoke's closing tag
    kKey,          // a parameter name, up to its closing quote
    kAttr,         // " string=\"true\">" or " string=\"false\">"
    kValue,        // a parameter value, until the automaton closes it
    kAfterParam,   // "\n"
    kAfterInvoke,  // the block's closing tag (or, with several calls, another invoke)
    kDone,
    kBroken,
  };
  struct Alt {
    std::string text;
    Node next;
  };
  // The literal alternatives of a node, in the order completion() prefers them (towards the
  // end of the block first); empty for kKey, kValue, kDone and kBroken.
  std::vector<Alt> alternatives(Node node) const;
  void step(char c);
  void enter(Node node);

  std::vector<std::string> names_;
  bool one_call_;
  Node node_ = Node::kBlockOpen;
  size_t pos_ = 0;         // bytes of the node's literal (or key) matched
  std::vector<Alt> alts_;  // the current node's alternatives still viable at pos_
  chat::DsmlAutomaton automaton_;
};

}  // namespace ds4::gen
