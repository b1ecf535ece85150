// src/api/endpoints.h: which parser, collector and writer serve each endpoint of ds4-server, so
// the HTTP layer only moves bytes (features.md §1.3).
// Owns: the endpoints' names (log and trace lines) and response id prefixes (chatcmpl-, cmpl-,
// msg_, resp_), the error body shape of each endpoint (Anthropic's for /v1/messages, OpenAI's
// otherwise), a generation request from body to serve::Request (the endpoint's parser, tool-call
// ids restored from the disk cache, build_request) with its ResponseMeta, the Responses
// conversations behind previous_response_id, the collector / stream writer of each endpoint, the
// /v1/messages/count_tokens body ({"input_tokens": N}, counted without the context limit) and the
// /health body (scheduler counters, and the disk cache's under "kv_disk").
// Does not own: routes, headers, auth, streaming and cancellation (http/), the protocols' JSON
// (the *_request and *_response files), the tokenizer, replay map and disk cache (borrowed: they
// must outlive the Endpoints).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "api/errors.h"
#include "api/protocol.h"
#include "api/request_common.h"
#include "api/responses_response.h"
#include "api/responses_store.h"
#include "ds4/tokenizer.h"
#include "serve/disk_cache.h"
#include "serve/replay_map.h"
#include "serve/request.h"
#include "serve/scheduler.h"

namespace ds4::api {

// "chat.completions", "completions", "messages", "responses".
const char* endpoint_name(Endpoint ep);

// The endpoint's error body: Anthropic's shape for kMessages, OpenAI's for the others.
std::string endpoint_error_body(Endpoint ep, const ApiError& e);

// A generation request ready for the scheduler, and what its response needs.
struct PreparedRequest {
  serve::Request request;
  // A fresh id with the endpoint's prefix, the model as named, the creation time, the prompt's
  // token count and the protocol switches the request chose.
  ResponseMeta meta;
  bool stream = false;
  // Responses: where the finished conversation is stored, and the conversation so far.
  ResponsesContext context;
};

// Non-streaming and streaming output of one request; `context` matters for kResponses only.
Collector make_collector(const ResponseMeta& meta, ResponsesContext context);
std::unique_ptr<StreamWriter> make_writer(const ResponseMeta& meta, ResponsesContext context);

// /health: {"status":"ok","queued","running","sessions","free"}, plus "kv_disk" {"files",
// "bytes","saved","failed","dropped","hits"} when `disk` is given.
std::string health_body(const serve::SchedulerStats& s, const serve::DiskCacheStats* disk);

class Endpoints {
 public:
  // `replay`, `disk`: nullptr when exact replay or the disk cache is off.
  Endpoints(const Tokenizer& tok, ApiConfig config, serve::ReplayMap* replay = nullptr,
            serve::DiskCache* disk = nullptr);

  const ApiConfig& config() const { return config_; }

  // POST of a generation endpoint: parses `body` with the endpoint's parser, restores the
  // history's tool-call ids the replay map lacks from the disk cache, renders and tokenizes.
  // Errors: the parser's and build_request's (400, 404 model_not_found).
  ApiResult<PreparedRequest> prepare(Endpoint ep, std::string_view body);

  // POST /v1/messages/count_tokens: {"input_tokens": N}, N the prompt tokens the same Messages
  // request would render to (never refused for length). Errors: the Messages parser's.
  ApiResult<std::string> count_tokens(std::string_view body);

  // GET /health for the scheduler's counters, with this server's disk cache counters.
  std::string health(const serve::SchedulerStats& s) const;

 private:
  // Exact replay across restarts (features.md §3.2): the call ids of the history that the
  // replay map does not know are looked up in the disk cache's tool-id maps before rendering.
  void restore_tool_ids(const ApiRequest& r);

  const Tokenizer* tok_;
  ApiConfig config_;
  serve::ReplayMap* replay_;
  serve::DiskCache* disk_;
  ResponsesStore responses_;  // previous_response_id -> conversation
};

}  // namespace ds4::api
