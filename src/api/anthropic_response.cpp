// src/api/anthropic_response.cpp: message objects and the Messages event stream.
#include "api/anthropic_response.h"

#include <nlohmann/json.hpp>

#include "api/request_common.h"

namespace ds4::api {
namespace {

using nlohmann::json;
using serve::EventKind;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string frame(const char* event, const json& data) {
  return std::string("event: ") + event + "\ndata: " + dump(data) + "\n\n";
}

// Anthropic counts input as uncached + cache reads + cache writes; the live session's reuse is a
// cache read and nothing is written to a separate cache.
json usage_json(const serve::Usage& u) {
  json j = {{"input_tokens", u.prompt_tokens - u.cached_tokens},
            {"output_tokens", u.completion_tokens},
            {"cache_read_input_tokens", u.cached_tokens},
            {"cache_creation_input_tokens", 0}};
  add_draft_usage(u, &j);
  return j;
}

// The tool input object; arguments that are not a JSON object are passed as {"arguments": text}.
json tool_input(const std::string& args) {
  if (args.empty()) return json::object();
  json j = json::parse(args, nullptr, false);
  if (j.is_object()) return j;
  return json{{"arguments", args}};
}

json stop_sequence_json(const serve::Event& done) {
  return done.finish == serve::FinishReason::kStop && !done.stop_sequence.empty()
             ? json(done.stop_sequence)
             : json(nullptr);
}

// The message object of a turn, or Anthropic's error body for a failed one.
std::string message_body(const ResponseMeta& meta, const Turn& turn) {
  const serve::Event& done = turn.done;
  if (failed(done.finish)) return anthropic_error_body(done_error(done));
  const std::string text = turn.joined(EventKind::kText);
  const std::string reasoning = turn.joined(EventKind::kReasoning);
  const auto calls = turn.calls();
  json content = json::array();
  if (!reasoning.empty()) {
    content.push_back({{"type", "thinking"}, {"thinking", reasoning}, {"signature", meta.id}});
  }
  if (!text.empty()) content.push_back({{"type", "text"}, {"text", text}});
  for (const auto& c : calls) {
    content.push_back({{"type", "tool_use"},
                       {"id", anthropic_id_from_call(c.id)},
                       {"name", c.name},
                       {"input", tool_input(c.arguments)}});
  }
  if (text.empty() && calls.empty()) content.push_back({{"type", "text"}, {"text", ""}});
  const json out = {{"id", meta.id},
                    {"type", "message"},
                    {"role", "assistant"},
                    {"model", meta.model},
                    {"content", std::move(content)},
                    {"stop_reason", anthropic_stop_reason(done)},
                    {"stop_sequence", stop_sequence_json(done)},
                    {"usage", usage_json(done.usage)}};
  return dump(out);
}

}  // namespace

const char* anthropic_stop_reason(const serve::Event& done) {
  switch (done.finish) {
    case serve::FinishReason::kToolCalls: return "tool_use";
    case serve::FinishReason::kLength: return "max_tokens";
    case serve::FinishReason::kStop:
      return done.stop_sequence.empty() ? "end_turn" : "stop_sequence";
    default: return "end_turn";
  }
}

Collector messages_collector(ResponseMeta meta) {
  return Collector([meta = std::move(meta)](const Turn& turn) { return message_body(meta, turn); });
}

std::string MessagesStreamWriter::start() {
  const json message = {{"id", meta_.id},
                        {"type", "message"},
                        {"role", "assistant"},
                        {"model", meta_.model},
                        {"content", json::array()},
                        {"stop_reason", nullptr},
                        {"stop_sequence", nullptr},
                        {"usage",
                         {{"input_tokens", meta_.prompt_tokens},
                          {"output_tokens", 0},
                          {"cache_read_input_tokens", 0},
                          {"cache_creation_input_tokens", 0}}}};
  return frame("message_start", {{"type", "message_start"}, {"message", message}});
}

std::string MessagesStreamWriter::keepalive() { return frame("ping", {{"type", "ping"}}); }

std::string MessagesStreamWriter::open(Block kind, const json& block) {
  std::string out = close();
  open_ = kind;
  ++index_;
  out += frame("content_block_start",
               {{"type", "content_block_start"}, {"index", index_}, {"content_block", block}});
  return out;
}

std::string MessagesStreamWriter::close() {
  std::string out;
  if (open_ == Block::kNone) return out;
  if (open_ == Block::kThinking) {
    out += frame("content_block_delta",
                 {{"type", "content_block_delta"},
                  {"index", index_},
                  {"delta", {{"type", "signature_delta"}, {"signature", meta_.id}}}});
  }
  out += frame("content_block_stop", {{"type", "content_block_stop"}, {"index", index_}});
  open_ = Block::kNone;
  return out;
}

std::string MessagesStreamWriter::encode(const serve::Event& e) {
  auto delta = [&](const json& d) {
    return frame("content_block_delta",
                 {{"type", "content_block_delta"}, {"index", index_}, {"delta", d}});
  };
  std::string out;
  switch (e.kind) {
    case EventKind::kReasoning:
      if (e.text.empty()) return {};
      if (open_ != Block::kThinking) {
        out = open(Block::kThinking, {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
      }
      return out + delta({{"type", "thinking_delta"}, {"thinking", e.text}});
    case EventKind::kText:
      if (e.text.empty()) return {};
      if (open_ != Block::kText) out = open(Block::kText, {{"type", "text"}, {"text", ""}});
      return out + delta({{"type", "text_delta"}, {"text", e.text}});
    case EventKind::kToolCallBegin:
      return open(Block::kToolUse, {{"type", "tool_use"},
                                    {"id", anthropic_id_from_call(e.tool_id)},
                                    {"name", e.text},
                                    {"input", json::object()}});
    case EventKind::kToolCallArguments:
      if (e.text.empty() || open_ != Block::kToolUse) return {};
      return delta({{"type", "input_json_delta"}, {"partial_json", e.text}});
    case EventKind::kToolCallEnd: return close();
    case EventKind::kDone: break;
  }
  out = close();
  if (failed(e.finish)) {
    ApiError err = done_error(e);
    err.status = 500;  // after the headers every failure is reported as api_error
    return out + frame("error", json::parse(anthropic_error_body(err)));
  }
  json usage = usage_json(e.usage);
  out += frame(
      "message_delta",
      {{"type", "message_delta"},
       {"delta",
        {{"stop_reason", anthropic_stop_reason(e)}, {"stop_sequence", stop_sequence_json(e)}}},
       {"usage", std::move(usage)}});
  out += frame("message_stop", {{"type", "message_stop"}});
  return out;
}

}  // namespace ds4::api
