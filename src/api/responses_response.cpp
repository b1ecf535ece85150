// src/api/responses_response.cpp: response objects and the Responses event stream.
#include "api/responses_response.h"

#include "api/sse.h"
#include "gen/tool_id.h"

namespace ds4::api {
namespace {

using nlohmann::json;
using serve::EventKind;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json usage_json(const serve::Usage& u) {
  json j = {{"input_tokens", u.prompt_tokens},
            {"input_tokens_details",
             {{"cached_tokens", u.cached_tokens},
              {"cache_write_tokens", u.prompt_tokens - u.cached_tokens}}},
            {"output_tokens", u.completion_tokens},
            {"output_tokens_details", {{"reasoning_tokens", u.reasoning_tokens}}},
            {"total_tokens", u.prompt_tokens + u.completion_tokens}};
  add_draft_usage(u, &j);
  return j;
}

std::string compact(const std::string& args) {
  const json j = json::parse(args, nullptr, false);
  return j.is_discarded() ? args : dump(j);
}

const char* status_name(const serve::Event& done) {
  if (failed(done.finish)) return "failed";
  return done.finish == serve::FinishReason::kLength ? "incomplete" : "completed";
}

}  // namespace

ResponsesStreamWriter::ResponsesStreamWriter(ResponseMeta meta, ResponsesContext context)
    : meta_(std::move(meta)), context_(std::move(context)) {}

json ResponsesStreamWriter::response() const {
  json out = {{"id", meta_.id},
              {"object", "response"},
              {"created_at", meta_.created},
              {"status", done_ ? status_name(done_event_) : "in_progress"},
              {"model", meta_.model},
              {"output", output_},
              {"error", nullptr},
              {"incomplete_details", nullptr},
              {"parallel_tool_calls", true},
              {"tool_choice", "auto"},
              {"tools", json::array()}};
  if (!done_) return out;
  if (failed(done_event_.finish)) {
    out["error"] = {{"code", "server_error"}, {"message", done_error(done_event_).message}};
  } else if (done_event_.finish == serve::FinishReason::kLength) {
    out["incomplete_details"] = {{"reason", "max_output_tokens"}};
  }
  out["usage"] = usage_json(done_event_.usage);
  return out;
}

std::string ResponsesStreamWriter::event(const char* type, json fields) {
  json e = {{"type", type}, {"sequence_number", seq_++}};
  for (auto& [k, v] : fields.items()) e[k] = std::move(v);
  return sse_data(dump(e));
}

std::string ResponsesStreamWriter::start() {
  std::string out = event("response.created", {{"response", response()}});
  out += event("response.in_progress", {{"response", response()}});  // after: sequence order
  return out;
}

std::string ResponsesStreamWriter::keepalive() {
  return event("response.in_progress", {{"response", response()}});
}

std::string ResponsesStreamWriter::open(Item kind, json item) {
  std::string out = close();
  open_ = kind;
  item_ = std::move(item);
  text_.clear();
  const json index = output_.size();
  out += event("response.output_item.added", {{"output_index", index}, {"item", item_}});
  if (kind == Item::kReasoning) {
    out += event("response.reasoning_summary_part.added",
                 {{"item_id", item_["id"]},
                  {"output_index", index},
                  {"summary_index", 0},
                  {"part", {{"type", "summary_text"}, {"text", ""}}}});
  } else if (kind == Item::kMessage) {
    out +=
        event("response.content_part.added",
              {{"item_id", item_["id"]},
               {"output_index", index},
               {"content_index", 0},
               {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}}}});
  }
  return out;
}

std::string ResponsesStreamWriter::close() {
  if (open_ == Item::kNone) return {};
  std::string out;
  const json index = output_.size();
  const json id = item_["id"];
  // A turn cut short (max tokens, error) leaves its last item incomplete.
  const bool cut = done_ && done_event_.finish != serve::FinishReason::kStop &&
                   done_event_.finish != serve::FinishReason::kToolCalls;
  item_["status"] = cut ? "incomplete" : "completed";
  if (open_ == Item::kReasoning) {
    const json part = {{"type", "summary_text"}, {"text", text_}};
    out += event("response.reasoning_summary_text.done",
                 {{"item_id", id}, {"output_index", index}, {"summary_index", 0}, {"text", text_}});
    out += event("response.reasoning_summary_part.done",
                 {{"item_id", id}, {"output_index", index}, {"summary_index", 0}, {"part", part}});
    item_["summary"] = json::array({part});
  } else if (open_ == Item::kMessage) {
    const json part = {{"type", "output_text"}, {"text", text_}, {"annotations", json::array()}};
    out += event("response.output_text.done",
                 {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"text", text_}});
    out += event("response.content_part.done",
                 {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"part", part}});
    item_["content"] = json::array({part});
  } else {
    const std::string args = compact(text_.empty() ? "{}" : text_);
    out += event(
        "response.function_call_arguments.done",
        {{"item_id", id}, {"output_index", index}, {"name", item_["name"]}, {"arguments", args}});
    item_["arguments"] = args;
  }
  out += event("response.output_item.done", {{"output_index", index}, {"item", item_}});
  output_.push_back(std::move(item_));
  item_ = json();
  open_ = Item::kNone;
  return out;
}

std::string ResponsesStreamWriter::encode(const serve::Event& e) {
  const json index = output_.size();
  std::string out;
  switch (e.kind) {
    case EventKind::kReasoning:
      reasoning_ += e.text;
      if (e.text.empty() || !meta_.emit_reasoning) return {};
      if (open_ != Item::kReasoning) {
        out = open(
            Item::kReasoning,
            {{"id", gen::new_tool_id("rs_")}, {"type", "reasoning"}, {"summary", json::array()}});
      }
      text_ += e.text;
      return out + event("response.reasoning_summary_text.delta", {{"item_id", item_["id"]},
                                                                   {"output_index", output_.size()},
                                                                   {"summary_index", 0},
                                                                   {"delta", e.text}});
    case EventKind::kText:
      content_ += e.text;
      if (e.text.empty()) return {};
      if (open_ != Item::kMessage) {
        out = open(Item::kMessage, {{"id", gen::new_tool_id("msg_")},
                                    {"type", "message"},
                                    {"status", "in_progress"},
                                    {"role", "assistant"},
                                    {"content", json::array()}});
      }
      text_ += e.text;
      return out + event("response.output_text.delta", {{"item_id", item_["id"]},
                                                        {"output_index", output_.size()},
                                                        {"content_index", 0},
                                                        {"delta", e.text}});
    case EventKind::kToolCallBegin:
      calls_.push_back({.id = e.tool_id, .name = e.text});
      return open(Item::kFunctionCall, {{"id", gen::new_tool_id("fc_")},
                                        {"type", "function_call"},
                                        {"status", "in_progress"},
                                        {"call_id", e.tool_id},
                                        {"name", e.text},
                                        {"arguments", ""}});
    case EventKind::kToolCallArguments:
      if (e.text.empty() || open_ != Item::kFunctionCall) return {};
      if (!calls_.empty()) calls_.back().arguments_json += e.text;
      text_ += e.text;
      return event("response.function_call_arguments.delta",
                   {{"item_id", item_["id"]}, {"output_index", index}, {"delta", e.text}});
    case EventKind::kToolCallEnd: return close();
    case EventKind::kDone: break;
  }
  done_event_ = e;
  done_ = true;
  out = close();
  if (!failed(e.finish)) remember();
  const char* terminal = failed(e.finish)                           ? "response.failed"
                         : e.finish == serve::FinishReason::kLength ? "response.incomplete"
                                                                    : "response.completed";
  return out + event(terminal, {{"response", response()}});
}

void ResponsesStreamWriter::remember() {
  if (!context_.store) return;
  auto conversation = std::move(context_.conversation);
  conversation.push_back({.role = chat::Role::kAssistant,
                          .content = content_,
                          .reasoning = reasoning_,
                          .tool_calls = calls_});
  context_.store->put(meta_.id, std::move(conversation));
}

Collector responses_collector(ResponseMeta meta, ResponsesContext context) {
  return Collector(
      [meta = std::move(meta), context = std::move(context)](const Turn& turn) mutable {
        if (failed(turn.done.finish)) return error_body(done_error(turn.done));
        ResponsesStreamWriter writer(std::move(meta), std::move(context));
        for (const auto& e : turn.events) writer.encode(e);
        writer.encode(turn.done);  // closes the last item and stores the conversation
        return dump(writer.response());
      });
}

}  // namespace ds4::api
