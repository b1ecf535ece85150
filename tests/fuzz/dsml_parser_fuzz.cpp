// libFuzzer target for the chat output parser (src/chat/output_parser.cpp) and the DSML encoder.
// The first input byte picks the mode and options, the second seeds the chunking; the rest is the
// model output. Checked for every input (ASan/UBSan instrumented):
//   - the same coalesced events whether fed whole, in random chunks, or one byte at a time;
//   - a well-formed event stream (kDone once and last; calls begin/end in order, arguments only
//     inside their call, each call's arguments a JSON object);
//   - every input byte counted exactly once (text + reasoning + markup + value bytes == size), text
//     counters equal to the emitted bytes, and without any recognised markup the emitted text is
//     exactly the input;
//   - no text event ends inside a character that the next event of the same kind continues.
//   - the DSML automaton (src/chat/dsml_automaton.h) fed one byte at a time answers its phase
//     queries consistently after every byte (structural() only inside a block) and accounts for
//     every byte once it is finished;
// Mode bit 0x80: instead, the rest is used as tool-call arguments (JSON text) and as a raw string
// argument, encoded to DSML and parsed back: the calls must come back exactly.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "chat/dsml_automaton.h"
#include "chat/event_sink.h"
#include "chat/json.h"
#include "ds4/chat.h"

namespace {

using ds4::chat::OutputEvent;
using ds4::chat::OutputEventKind;

void require(bool ok) {
  if (!ok) std::abort();
}

std::vector<OutputEvent> run(std::string_view text, ds4::chat::OutputParserOptions options,
                             std::mt19937* rng, int mode, ds4::chat::OutputStats* stats) {
  ds4::chat::OutputParser parser(options);
  std::vector<OutputEvent> events;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t n = text.size() - pos;
    if (mode == 1) n = 1;
    if (mode == 2) n = std::min<size_t>(n, 1 + (*rng)() % 13);
    parser.feed(text.substr(pos, n), &events);
    pos += n;
  }
  parser.finish(&events);
  if (stats) *stats = parser.stats();
  return events;
}

bool is_fragment(OutputEventKind k) {
  return k == OutputEventKind::kText || k == OutputEventKind::kReasoning ||
         k == OutputEventKind::kToolCallArguments;
}

std::vector<OutputEvent> coalesce(const std::vector<OutputEvent>& events) {
  std::vector<OutputEvent> out;
  for (const OutputEvent& e : events) {
    if (is_fragment(e.kind) && !out.empty() && out.back().kind == e.kind &&
        out.back().tool_index == e.tool_index) {
      out.back().text += e.text;
    } else {
      out.push_back(e);
    }
  }
  return out;
}

void check_stream(const std::vector<OutputEvent>& events) {
  require(!events.empty() && events.back().kind == OutputEventKind::kDone);
  int open = -1;
  int next_index = 0;
  std::string args;
  for (size_t i = 0; i < events.size(); ++i) {
    const OutputEvent& e = events[i];
    switch (e.kind) {
      case OutputEventKind::kDone: require(i + 1 == events.size() && open < 0); break;
      case OutputEventKind::kToolCallBegin:
        require(open < 0 && e.tool_index == next_index);
        open = next_index++;
        args.clear();
        break;
      case OutputEventKind::kToolCallArguments:
        require(open >= 0 && e.tool_index == open && !e.text.empty());
        args += e.text;
        break;
      case OutputEventKind::kToolCallEnd: {
        require(open >= 0 && e.tool_index == open);
        auto parsed = ds4::chat::json::parse(args, 100000);
        require(parsed.is_ok() && parsed->is_object());
        open = -1;
        break;
      }
      default: require(!e.text.empty()); break;
    }
    // A character split between two events of the same kind would show up as a held-back lead
    // byte followed by a continuation byte.
    if (i + 1 < events.size() && is_fragment(e.kind) && events[i + 1].kind == e.kind) {
      const std::string& next = events[i + 1].text;
      if (ds4::chat::incomplete_utf8_tail(e.text) > 0 && !next.empty()) {
        require((static_cast<unsigned char>(next[0]) & 0xc0) != 0x80);
      }
    }
  }
}

void fuzz_automaton(std::string_view text, const ds4::chat::OutputParserOptions& options) {
  using ds4::chat::DsmlPhase;
  ds4::chat::DsmlAutomaton a(
      ds4::chat::DsmlOptions{.thinking = options.thinking, .tool_calls = options.parse_tool_calls});
  for (char c : text) {
    a.feed(std::string_view(&c, 1), nullptr);
    const DsmlPhase p = a.phase();
    if (a.structural()) {
      require(p == DsmlPhase::kStructure || p == DsmlPhase::kStringPayload ||
              p == DsmlPhase::kJsonPayload);
    }
    require(a.pending_marker().size() <= a.held_bytes());
    if (!options.parse_tool_calls)
      require(p == DsmlPhase::kReasoning || p == DsmlPhase::kOutside || p == DsmlPhase::kAfterEos);
  }
  a.finish(nullptr);
  const ds4::chat::DsmlCounts& n = a.counts();
  require(a.held_bytes() == 0);
  require(n.text_bytes + n.reasoning_bytes + n.markup_bytes + n.payload_bytes == text.size());
}

void fuzz_parser(std::string_view text, uint8_t flags, uint8_t seed) {
  const ds4::chat::OutputParserOptions options{.thinking = (flags & 1) != 0,
                                               .parse_tool_calls = (flags & 2) == 0};
  std::mt19937 rng(seed);
  ds4::chat::OutputStats stats;
  const auto whole = run(text, options, &rng, 0, &stats);
  const auto bytes = run(text, options, &rng, 1, nullptr);
  const auto chunks = run(text, options, &rng, 2, nullptr);
  fuzz_automaton(text, options);
  check_stream(whole);
  check_stream(bytes);
  check_stream(chunks);
  const auto want = coalesce(whole);
  require(coalesce(bytes) == want);
  require(coalesce(chunks) == want);

  size_t text_bytes = 0;
  size_t reasoning_bytes = 0;
  std::string emitted;
  for (const OutputEvent& e : whole) {
    if (e.kind == OutputEventKind::kText) text_bytes += e.text.size();
    if (e.kind == OutputEventKind::kReasoning) reasoning_bytes += e.text.size();
    if (e.kind == OutputEventKind::kText || e.kind == OutputEventKind::kReasoning) {
      emitted += e.text;
    }
  }
  require(stats.text_bytes == text_bytes && stats.reasoning_bytes == reasoning_bytes);
  require(stats.text_bytes + stats.reasoning_bytes + stats.markup_bytes + stats.value_bytes ==
          text.size());
  if (stats.markup_bytes == 0 && stats.value_bytes == 0) require(emitted == text);
}

std::string expected_arguments(const std::string& arguments) {
  auto parsed = ds4::chat::json::parse(arguments);
  if (parsed.is_ok() && parsed->is_object()) return ds4::chat::json::dump(parsed.value());
  std::string out = "{\"arguments\": ";
  ds4::chat::json::append_quoted(arguments, &out);
  return out + "}";
}

void fuzz_round_trip(std::string_view text, uint8_t seed) {
  std::string as_string = "{\"s\": ";
  ds4::chat::json::append_quoted(text, &as_string);
  as_string += "}";
  const std::vector<ds4::chat::ToolCall> calls = {{"", "f", std::string(text)},
                                                  {"", "g", as_string}};
  for (const auto& c : calls) {
    // Parameter names live in a tag whose length the parser bounds; skip absurd ones.
    auto parsed = ds4::chat::json::parse(c.arguments_json);
    if (parsed.is_ok() && parsed->is_object()) {
      for (const auto& m : parsed->members) {
        if (m.key.size() > 3000) return;
      }
    }
  }
  const std::string output = "x" + ds4::chat::encode_tool_calls(calls);
  std::mt19937 rng(seed);
  const auto events = run(output, {}, &rng, 2, nullptr);
  check_stream(events);
  std::vector<std::string> args;
  for (const OutputEvent& e : events) {
    if (e.kind == OutputEventKind::kToolCallBegin) args.emplace_back();
    if (e.kind == OutputEventKind::kToolCallArguments) args.back() += e.text;
  }
  require(args.size() == 2);
  require(args[0] == expected_arguments(calls[0].arguments_json));
  require(args[1] == expected_arguments(calls[1].arguments_json));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t flags = data[0];
  const uint8_t seed = data[1];
  const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  if (flags & 0x80) {
    fuzz_round_trip(text, seed);
  } else {
    fuzz_parser(text, flags, seed);
  }
  return 0;
}
