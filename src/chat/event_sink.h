// src/chat/event_sink.h: collects the output parser's decided bytes into events.
// Owns: merging consecutive bytes of one kind into one event, JSON-escaping raw string-parameter
// bytes into argument fragments, and holding back an incomplete UTF-8 character at a flush so no
// event ends inside a character.
// Does not own: deciding what bytes mean (output_parser.cpp).
//
// "Character" is read loosely (a lead byte 0xC0..0xF7 plus the continuation bytes 0x80..0xBF it
// announces); invalid bytes count as one-byte characters. The loose reading is what makes the
// split points independent of how the input was chunked.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "ds4/chat.h"

namespace ds4::chat {

// Bytes at the end of `s` that start a character not yet complete (0..3).
size_t incomplete_utf8_tail(std::string_view s);

class EventSink {
 public:
  void text(OutputEventKind kind, std::string_view bytes);  // kText or kReasoning
  void arguments(int tool_index, std::string_view json_text);
  void raw_string_value(int tool_index, std::string_view bytes);  // escaped into arguments
  void structural(OutputEvent event);                             // begin / end / done

  // Moves finished events out. `final` also releases held incomplete characters.
  void flush(bool final, std::vector<OutputEvent>* out);
  size_t held_bytes() const;

 private:
  void switch_to(OutputEventKind kind, int tool_index);
  void settle_raw(bool final);

  std::vector<OutputEvent> ready_;
  OutputEvent pending_;  // text is the event text so far; empty means none
  bool has_pending_ = false;
  std::string raw_;  // string-parameter bytes not yet escaped into pending_
};

}  // namespace ds4::chat
