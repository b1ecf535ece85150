// src/api/responses_response.h: serve events -> OpenAI Responses objects and the Responses event
// stream (features.md §1.11, §1.12, spec/clients.md "Codex CLI").
// Owns: the response object (reasoning item when asked for, message item with output_text,
// function_call items with call ids, status, incomplete_details, error, usage with cached
// tokens), the stream lifecycle (response.created, response.in_progress, output_item.added /
// done, content_part.added / done, output_text.delta / done, reasoning_summary_part.added /
// done, reasoning_summary_text.delta / done, function_call_arguments.delta / done, and a
// terminal response.completed / incomplete / failed), sequence numbers, response.in_progress
// as the keepalive (Codex's idle timer ignores comments), and storing the finished
// conversation for previous_response_id.
// Does not own: gathering the events of a non-streaming request (Collector, protocol.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/protocol.h"
#include "api/responses_store.h"

namespace ds4::api {

// What the writer needs besides the meta: where to remember the conversation (nullptr: nowhere).
struct ResponsesContext {
  ResponsesStore* store = nullptr;
  std::vector<chat::Message> conversation;
};

class ResponsesStreamWriter final : public StreamWriter {
 public:
  ResponsesStreamWriter(ResponseMeta meta, ResponsesContext context);
  std::string start() override;
  std::string encode(const serve::Event& e) override;
  std::string keepalive() override;

  // The response object as it stands (after kDone: the final one).
  nlohmann::json response() const;

 private:
  enum class Item { kNone, kReasoning, kMessage, kFunctionCall };
  std::string event(const char* type, nlohmann::json fields);
  std::string open(Item kind, nlohmann::json item);
  std::string close();
  void remember();

  ResponseMeta meta_;
  ResponsesContext context_;
  long long seq_ = 0;
  Item open_ = Item::kNone;
  nlohmann::json item_;                              // the open item
  std::string text_;                                 // its text or arguments so far
  nlohmann::json output_ = nlohmann::json::array();  // closed items
  std::string reasoning_, content_;                  // the whole turn (stored conversation)
  std::vector<chat::ToolCall> calls_;
  serve::Event done_event_;
  bool done_ = false;
};

// Non-streaming: the response object (or the error body) of a turn, built by the same item logic
// as the stream (the turn's events replayed through a ResponsesStreamWriter, its bytes dropped);
// a turn that did not fail is stored for previous_response_id as the stream's is.
Collector responses_collector(ResponseMeta meta, ResponsesContext context);

}  // namespace ds4::api
