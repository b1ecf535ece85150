// libFuzzer target for the OpenAI request parser (src/api/openai_request.cpp), the Anthropic
// Messages and Responses parsers (anthropic_request.cpp, responses_request.cpp) and the OpenAI
// response encoders (src/api/openai_response.cpp, with the collector of protocol.cpp). The first
// input byte picks the endpoint and the context size; the rest is the request body. Checked for
// every input (ASan/UBSan instrumented):
//   - parsing never throws or crashes; a rejection is a 400 or 404 whose error body is JSON with a
//     non-empty message;
//   - an accepted request is in range: messages present, max_tokens in [0, n_ctx], Think Max only
//     with enough context, thinking mode's fixed sampling (temperature 1, top_p 1, min_p 0.05);
//   - the body's bytes used as event text (any bytes, invalid UTF-8 included) always encode to
//     SSE frames and a completion whose JSON parses.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "api/anthropic_request.h"
#include "api/openai_request.h"
#include "api/openai_response.h"
#include "api/responses_request.h"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

void check_frames(const std::string& sse) {
  size_t pos = 0;
  while (pos < sse.size()) {
    const size_t end = sse.find("\n\n", pos);
    require(end != std::string::npos);
    const std::string_view ev(sse.data() + pos, end - pos);
    require(ev.find('\n') == std::string_view::npos);
    if (ev.starts_with("data: ") && ev != "data: [DONE]") {
      require(!nlohmann::json::parse(ev.substr(6), nullptr, false).is_discarded());
    } else {
      require(ev == "data: [DONE]" || ev.starts_with(":"));
    }
    pos = end + 2;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ds4;
  if (size < 1) return 0;
  const auto endpoint = (data[0] & 1) ? api::Endpoint::kCompletions : api::Endpoint::kChat;
  const api::ApiConfig config{.n_ctx = (data[0] & 2) ? 393216 : 4096};
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);

  // Bits 2-3 also run the Anthropic Messages and the Responses parsers on the same body.
  if (data[0] & 4) {
    auto m = api::parse_messages_request(body, config);
    if (auto* e = std::get_if<api::ApiError>(&m)) {
      require(e->status == 400 || e->status == 404);
      require(!nlohmann::json::parse(api::anthropic_error_body(*e), nullptr, false).is_discarded());
    } else {
      require(!std::get<api::ApiRequest>(m).messages.empty());
    }
  }
  if (data[0] & 8) {
    api::ResponsesStore store(2);
    auto p = api::parse_responses_request(body, config, &store);
    if (auto* e = std::get_if<api::ApiError>(&p)) {
      require(e->status == 400 || e->status == 404);
    } else {
      require(!std::get<api::ResponsesParsed>(p).request.messages.empty());
    }
  }

  auto r = api::parse_request(endpoint, body, config);
  if (auto* e = std::get_if<api::ApiError>(&r)) {
    require(e->status == 400 || e->status == 404);
    const auto j = nlohmann::json::parse(api::error_body(*e), nullptr, false);
    require(!j.is_discarded() && j["error"]["message"].is_string() &&
            !j["error"]["message"].get<std::string>().empty());
  } else {
    const api::ApiRequest& req = std::get<api::ApiRequest>(r);
    require(!req.messages.empty());
    require(req.max_tokens >= 0 && req.max_tokens <= config.n_ctx);
    require(req.think != chat::ThinkMode::kMax || config.n_ctx >= chat::kThinkMaxMinContext);
    if (req.think != chat::ThinkMode::kNone) {
      require(req.sampling.temperature == 1.0f && req.sampling.top_p == 1.0f &&
              req.sampling.min_p == 0.05f && req.sampling.top_k == 0);
    }
  }

  const api::ResponseMeta meta{
      .endpoint = endpoint, .id = "x", .model = body, .include_usage = true};
  api::StreamEncoder enc(meta);
  api::Collector col = api::openai_collector(meta);
  const serve::Event events[] = {
      {.kind = serve::EventKind::kReasoning, .text = body},
      {.kind = serve::EventKind::kText, .text = body},
      {.kind = serve::EventKind::kToolCallBegin, .text = body, .tool_index = 0, .tool_id = body},
      {.kind = serve::EventKind::kToolCallArguments, .text = body, .tool_index = 0},
      {.kind = serve::EventKind::kDone, .finish = serve::FinishReason::kToolCalls}};
  std::string sse = enc.start();
  for (const auto& e : events) {
    sse += enc.encode(e);
    col.add(e);
  }
  check_frames(sse);
  require(col.done() && col.status() == 200);
  require(!nlohmann::json::parse(col.body(), nullptr, false).is_discarded());
  return 0;
}
