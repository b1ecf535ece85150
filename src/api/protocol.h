// src/api/protocol.h: the two shapes every protocol's output takes, so the HTTP layer drives
// OpenAI chat/completions, Anthropic Messages and OpenAI Responses the same way.
// Owns: the Collector (non-streaming: events -> one JSON body) and StreamWriter (streaming:
// events -> SSE bytes, plus the protocol's keepalive frame) interfaces.
#pragma once

#include <string>

#include "api/errors.h"
#include "serve/request.h"

namespace ds4::api {

// A kDone that ended in kError / kCancelled, and the error it reports (500 "generation failed"
// when the scheduler gave no status).
bool failed(serve::FinishReason f);
ApiError done_error(const serve::Event& done);

class Collector {
 public:
  virtual ~Collector() = default;
  virtual void add(const serve::Event& e) = 0;
  virtual bool done() const = 0;
  // After kDone: 200 and the response object, or the error status and the protocol's error body.
  virtual int status() const = 0;
  virtual std::string body() const = 0;
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
