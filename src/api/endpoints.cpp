// src/api/endpoints.cpp: endpoint -> parser, collector, writer; the count_tokens and /health
// bodies.
#include "api/endpoints.h"

#include <ctime>
#include <nlohmann/json.hpp>
#include <variant>
#include <vector>

#include "api/anthropic_request.h"
#include "api/anthropic_response.h"
#include "api/openai_request.h"
#include "api/openai_response.h"
#include "api/responses_request.h"
#include "gen/tool_id.h"

namespace ds4::api {
namespace {

const char* id_prefix(Endpoint ep) {
  switch (ep) {
    case Endpoint::kChat: return "chatcmpl-";
    case Endpoint::kCompletions: return "cmpl-";
    case Endpoint::kMessages: return "msg_";
    case Endpoint::kResponses: return "resp_";
  }
  return "";
}

// A context n_ctx no prompt reaches: count_tokens is not refused for length.
constexpr int kUnlimitedContext = 1 << 30;

}  // namespace

const char* endpoint_name(Endpoint ep) {
  switch (ep) {
    case Endpoint::kChat: return "chat.completions";
    case Endpoint::kCompletions: return "completions";
    case Endpoint::kMessages: return "messages";
    case Endpoint::kResponses: return "responses";
  }
  return "?";
}

std::string endpoint_error_body(Endpoint ep, const ApiError& e) {
  return ep == Endpoint::kMessages ? anthropic_error_body(e) : error_body(e);
}

Collector make_collector(const ResponseMeta& meta, ResponsesContext context) {
  switch (meta.endpoint) {
    case Endpoint::kMessages: return messages_collector(meta);
    case Endpoint::kResponses: return responses_collector(meta, std::move(context));
    case Endpoint::kChat:
    case Endpoint::kCompletions: break;
  }
  return openai_collector(meta);
}

std::unique_ptr<StreamWriter> make_writer(const ResponseMeta& meta, ResponsesContext context) {
  switch (meta.endpoint) {
    case Endpoint::kMessages: return std::make_unique<MessagesStreamWriter>(meta);
    case Endpoint::kResponses:
      return std::make_unique<ResponsesStreamWriter>(meta, std::move(context));
    case Endpoint::kChat:
    case Endpoint::kCompletions: break;
  }
  return std::make_unique<StreamEncoder>(meta);
}

std::string health_body(const serve::SchedulerStats& s, const serve::DiskCacheStats* disk) {
  nlohmann::json j = {{"status", "ok"},
                      {"queued", s.queued},
                      {"running", s.running},
                      {"sessions", s.sessions},
                      {"free", s.free}};
  if (disk) {
    const serve::DiskCacheStats& d = *disk;
    j["kv_disk"] = {{"files", d.files},   {"bytes", d.bytes},     {"saved", d.saved},
                    {"failed", d.failed}, {"dropped", d.dropped}, {"hits", d.hits}};
  }
  return j.dump();
}

Endpoints::Endpoints(const Tokenizer& tok, ApiConfig config, serve::ReplayMap* replay,
                     serve::DiskCache* disk)
    : tok_(&tok), config_(std::move(config)), replay_(replay), disk_(disk) {
  config_.max_token_bytes = tok.max_token_bytes();
}

void Endpoints::restore_tool_ids(const ApiRequest& r) {
  if (!disk_ || !replay_) return;
  std::vector<std::string> ids;
  for (const auto& m : r.messages) {
    for (const auto& c : m.tool_calls) {
      if (!c.id.empty()) ids.push_back(c.id);
    }
  }
  disk_->restore_tool_ids(ids);
}

ApiResult<PreparedRequest> Endpoints::prepare(Endpoint ep, std::string_view body) {
  PreparedRequest out;
  ApiRequest ar;
  switch (ep) {
    case Endpoint::kMessages: {
      auto parsed = parse_messages_request(body, config_);
      if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
      ar = std::move(std::get<ApiRequest>(parsed));
      break;
    }
    case Endpoint::kResponses: {
      auto parsed = parse_responses_request(body, config_, &responses_);
      if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
      auto& p = std::get<ResponsesParsed>(parsed);
      ar = std::move(p.request);
      out.context = {.store = &responses_, .conversation = std::move(p.conversation)};
      break;
    }
    case Endpoint::kChat:
    case Endpoint::kCompletions: {
      auto parsed = parse_request(ep, body, config_);
      if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
      ar = std::move(std::get<ApiRequest>(parsed));
      break;
    }
  }
  restore_tool_ids(ar);
  auto built = build_request(ar, *tok_, config_, replay_);
  if (auto* e = std::get_if<ApiError>(&built)) return *e;
  out.request = std::move(std::get<serve::Request>(built));
  out.meta = {.endpoint = ep,
              .id = gen::new_tool_id(id_prefix(ep)),
              .model = ar.model,
              .created = static_cast<long long>(std::time(nullptr)),
              .include_usage = ar.include_usage,
              .prompt_tokens = static_cast<int>(out.request.prompt.size()),
              .emit_reasoning = ar.emit_reasoning,
              .named_tool = ar.tool_choice.mode == serve::ToolMode::kNamed};
  out.stream = ar.stream;
  return out;
}

ApiResult<std::string> Endpoints::count_tokens(std::string_view body) {
  auto parsed = parse_messages_request(body, config_);
  if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
  const ApiRequest& ar = std::get<ApiRequest>(parsed);
  ApiConfig unlimited = config_;
  unlimited.n_ctx = kUnlimitedContext;
  restore_tool_ids(ar);
  auto built = build_request(ar, *tok_, unlimited, replay_);
  if (auto* e = std::get_if<ApiError>(&built)) return *e;
  const nlohmann::json j = {{"input_tokens", std::get<serve::Request>(built).prompt.size()}};
  return j.dump();
}

std::string Endpoints::health(const serve::SchedulerStats& s) const {
  if (!disk_) return health_body(s, nullptr);
  const serve::DiskCacheStats d = disk_->stats();
  return health_body(s, &d);
}

}  // namespace ds4::api
