// src/api/protocol.h: the two shapes every protocol's output takes, so the HTTP layer drives
// OpenAI chat/completions, Anthropic Messages and OpenAI Responses the same way.
// Owns: ResponseMeta (what a response says besides the events), the one non-streaming Collector
// (events -> a Turn: reasoning, text and tool calls in order, and the kDone event; then the
// status, and the body the protocol's renderer makes of the turn), the StreamWriter interface
// (streaming: events -> SSE bytes, plus the protocol's keepalive frame), and the failure rule
// they all share.
// Does not own: any protocol's JSON (openai_response.h, anthropic_response.h,
// responses_response.h build their collectors and writers), which protocol serves which
// endpoint (endpoints.h).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/errors.h"
#include "api/request_common.h"
#include "serve/request.h"

namespace ds4::api {

// The usage extension of MTP drafting (issue 51), added to a usage object only when the request
// drafted: {"ds4_mtp": {"steps", "draft_tokens", "accepted_draft_tokens"}}.
void add_draft_usage(const serve::Usage& u, nlohmann::json* usage);

struct ResponseMeta {
  Endpoint endpoint = Endpoint::kChat;
  std::string id;     // chatcmpl-... / cmpl-... / msg_... / resp_...
  std::string model;  // as the request named it
  long long created = 0;
  bool include_usage = false;
  int prompt_tokens = 0;       // known before the prefill (Anthropic message_start)
  bool emit_reasoning = true;  // Responses: reasoning items only when asked for
  // Chat: tool_choice named one function. OpenAI then ends a call with finish_reason "stop",
  // not "tool_calls" (the client asked for that call; it did not choose to make it).
  bool named_tool = false;
};

// A kDone that ended in kError / kCancelled, and the error it reports (500 "generation failed"
// when the scheduler gave no status).
bool failed(serve::FinishReason f);
ApiError done_error(const serve::Event& done);

// What one request generated, gathered from its events.
struct Turn {
  struct Call {
    std::string id, name, arguments;
  };
  // The events before kDone, in order: consecutive reasoning, text or argument events merged into
  // one and empty ones dropped (no protocol's output depends on how the bytes were split), so a
  // protocol can replay them into its stream logic.
  std::vector<serve::Event> events;
  serve::Event done;  // the kDone event

  std::string joined(serve::EventKind kind) const;  // all the reasoning, or all the text
  // Each call with the arguments that came after it, up to the next call.
  std::vector<Call> calls() const;
};

// Non-streaming: gathers a request's events; at kDone the protocol's renderer turns the turn into
// the response body (or, when the turn failed, the protocol's error body).
class Collector final {
 public:
  using Render = std::function<std::string(const Turn&)>;
  explicit Collector(Render render) : render_(std::move(render)) {}

  void add(const serve::Event& e);
  bool done() const { return done_; }
  // After kDone: 200, or the failure's status (done_error).
  int status() const;
  const std::string& body() const { return body_; }

 private:
  Turn turn_;
  Render render_;
  std::string body_;
  bool done_ = false;
};

class StreamWriter {
 public:
  virtual ~StreamWriter() = default;
  // The first bytes, sent as soon as the request is accepted (before the prefill ends).
  virtual std::string start() = 0;
  // The bytes for one event (possibly none); kDone ends the stream.
  virtual std::string encode(const serve::Event& e) = 0;
  // Sent when no event came for a while (queue wait, long prefill): a comment for OpenAI chat,
  // `event: ping` for Anthropic, a `response.in_progress` data event for Responses (Codex's idle
  // timer ignores comments).
  virtual std::string keepalive() = 0;
};

}  // namespace ds4::api
