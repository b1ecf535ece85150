// src/api/openai_response.cpp: completion objects, stream chunks and model cards.
#include "api/openai_response.h"

#include <nlohmann/json.hpp>

#include "api/sse.h"

namespace ds4::api {
namespace {

using nlohmann::json;
using serve::EventKind;

constexpr long long kModelCreated = 1767225600;  // fixed, as the reference server

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json usage_json(const serve::Usage& u) {
  json j = {{"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens},
            {"prompt_tokens_details",
             {{"cached_tokens", u.cached_tokens},
              {"cache_write_tokens", u.prompt_tokens - u.cached_tokens}}}};
  add_draft_usage(u, &j);
  return j;
}

json head(const ResponseMeta& m, bool chunk) {
  const bool chat = m.endpoint == Endpoint::kChat;
  return {
      {"id", m.id},
      {"object", chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
      {"created", m.created},
      {"model", m.model}};
}

// Tool-call arguments as compact JSON (key order kept); text that is not JSON is passed through.
std::string compact_arguments(const std::string& args) {
  const json j = json::parse(args, nullptr, false);
  return j.is_discarded() ? args : dump(j);
}

// The chat.completion / text_completion object of a turn, or the error body of a failed one.
std::string completion_body(const ResponseMeta& meta, const Turn& turn) {
  const serve::Event& done = turn.done;
  if (failed(done.finish)) return error_body(done_error(done));
  const std::string content = turn.joined(EventKind::kText);
  const auto calls = turn.calls();
  json out = head(meta, false);
  json choice = {{"index", 0}, {"finish_reason", finish_reason_name(done.finish, meta.named_tool)}};
  if (meta.endpoint == Endpoint::kCompletions) {
    choice["text"] = content;
    choice["logprobs"] = nullptr;
  } else {
    json msg = {{"role", "assistant"}};
    msg["content"] = content.empty() && !calls.empty() ? json(nullptr) : json(content);
    const std::string reasoning = turn.joined(EventKind::kReasoning);
    if (!reasoning.empty()) msg["reasoning_content"] = reasoning;
    if (!calls.empty()) {
      json list = json::array();
      for (const auto& c : calls) {
        list.push_back(
            {{"id", c.id},
             {"type", "function"},
             {"function", {{"name", c.name}, {"arguments", compact_arguments(c.arguments)}}}});
      }
      msg["tool_calls"] = std::move(list);
    }
    choice["message"] = std::move(msg);
  }
  out["choices"] = json::array({std::move(choice)});
  out["usage"] = usage_json(done.usage);
  return dump(out);
}

}  // namespace

const char* finish_reason_name(serve::FinishReason reason, bool named_tool) {
  switch (reason) {
    case serve::FinishReason::kStop: return "stop";
    case serve::FinishReason::kLength: return "length";
    case serve::FinishReason::kToolCalls: return named_tool ? "stop" : "tool_calls";
    case serve::FinishReason::kError:
    case serve::FinishReason::kCancelled: return "error";
  }
  return "error";
}

Collector openai_collector(ResponseMeta meta) {
  return Collector(
      [meta = std::move(meta)](const Turn& turn) { return completion_body(meta, turn); });
}

std::string StreamEncoder::chunk(const nlohmann::json& payload, const char* finish) const {
  json out = head(meta_, true);
  json choice = {{"index", 0}, {"finish_reason", finish ? json(finish) : json(nullptr)}};
  if (meta_.endpoint == Endpoint::kCompletions) {
    choice["text"] = payload;
    choice["logprobs"] = nullptr;
  } else {
    choice["delta"] = payload;
  }
  out["choices"] = json::array({std::move(choice)});
  return sse_data(dump(out));
}

std::string StreamEncoder::start() {
  if (meta_.endpoint == Endpoint::kCompletions) return {};
  return chunk(json{{"role", "assistant"}, {"content", ""}}, nullptr);
}

std::string StreamEncoder::encode(const serve::Event& e) {
  const bool chat = meta_.endpoint == Endpoint::kChat;
  switch (e.kind) {
    case EventKind::kText:
      if (e.text.empty()) return {};
      return chunk(chat ? json{{"content", e.text}} : json(e.text), nullptr);
    case EventKind::kReasoning:
      if (e.text.empty() || !chat) return {};
      return chunk(json{{"reasoning_content", e.text}}, nullptr);
    case EventKind::kToolCallBegin: {
      json call = {{"index", e.tool_index},
                   {"id", e.tool_id},
                   {"type", "function"},
                   {"function", {{"name", e.text}, {"arguments", ""}}}};
      return chunk(json{{"tool_calls", json::array({call})}}, nullptr);
    }
    case EventKind::kToolCallArguments: {
      if (e.text.empty()) return {};
      json call = {{"index", e.tool_index}, {"function", {{"arguments", e.text}}}};
      return chunk(json{{"tool_calls", json::array({call})}}, nullptr);
    }
    case EventKind::kToolCallEnd: return {};
    case EventKind::kDone: break;
  }
  std::string out;
  if (e.finish == serve::FinishReason::kError || e.finish == serve::FinishReason::kCancelled) {
    ApiError err = done_error(e);
    err.type = "server_error";
    out += sse_data(error_body(err));
  } else {
    out += chunk(chat ? json::object() : json(""), finish_reason_name(e.finish, meta_.named_tool));
    if (meta_.include_usage) {
      json u = head(meta_, true);
      u["choices"] = json::array();
      u["usage"] = usage_json(e.usage);
      out += sse_data(dump(u));
    }
  }
  out += kSseDone;
  return out;
}

std::string StreamEncoder::keepalive() { return std::string(kSseKeepalive); }

std::string model_json(std::string_view id, const ModelCard& card) {
  if (id != kFlashId && id != kProId) return {};
  json m = {{"id", id},
            {"object", "model"},
            {"created", kModelCreated},
            {"owned_by", "dwarfstar"},
            {"name", card.name},
            {"context_length", card.n_ctx},
            {"top_provider",
             {{"context_length", card.n_ctx},
              {"max_completion_tokens", card.n_ctx},
              {"is_moderated", false}}},
            {"supported_parameters",
             {"tools", "tool_choice", "max_tokens", "temperature", "top_p", "top_k", "min_p",
              "stop", "seed", "stream", "reasoning_effort"}}};
  return dump(m);
}

std::string models_list_json(const ModelCard& card) {
  json data = json::array();
  for (auto id : {kFlashId, kProId}) data.push_back(json::parse(model_json(id, card)));
  return dump(json{{"object", "list"}, {"data", std::move(data)}});
}

}  // namespace ds4::api
