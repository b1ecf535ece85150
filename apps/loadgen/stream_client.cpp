// apps/loadgen/stream_client.cpp: see stream_client.h.
#include "apps/loadgen/stream_client.h"

#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>

namespace ds4::loadgen {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
double clock_seconds(Clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// Splits the byte stream into SSE events and handles each `data:` payload.
class SseReader {
 public:
  SseReader(StreamResult* out, Clock::time_point t0, const std::function<void()>* first)
      : out_(out), t0_(t0), first_(first) {}

  void feed(const char* data, size_t n) {
    buf_.append(data, n);
    for (size_t nl; (nl = buf_.find('\n')) != std::string::npos;) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.rfind("data:", 0) == 0)
        on_data(line.substr(line.size() > 5 && line[5] == ' ' ? 6 : 5));
    }
  }
  bool done() const { return done_; }

 private:
  void on_data(const std::string& payload) {
    if (payload == "[DONE]") {
      done_ = true;
      return;
    }
    const nlohmann::json j = nlohmann::json::parse(payload, nullptr, false);
    if (j.is_discarded()) return;
    if (j.contains("error")) {
      out_->error = j["error"].dump();
      return;
    }
    if (const auto u = j.find("usage"); u != j.end() && u->is_object()) {
      out_->prompt_tokens = u->value("prompt_tokens", 0);
      out_->completion_tokens = u->value("completion_tokens", 0);
      if (const auto d = u->find("prompt_tokens_details"); d != u->end() && d->is_object())
        out_->cached_tokens = d->value("cached_tokens", 0);
    }
    const auto choices = j.find("choices");
    if (choices == j.end() || !choices->is_array() || choices->empty()) return;
    const nlohmann::json& c = (*choices)[0];
    if (c.contains("finish_reason") && c["finish_reason"].is_string())
      out_->finish_reason = c["finish_reason"].get<std::string>();
    const auto delta = c.find("delta");
    if (delta == c.end() || !delta->is_object()) return;
    const bool token =
        (delta->contains("content") && (*delta)["content"].is_string() &&
         !(*delta)["content"].get<std::string>().empty()) ||
        (delta->contains("reasoning_content") && (*delta)["reasoning_content"].is_string() &&
         !(*delta)["reasoning_content"].get<std::string>().empty());
    if (!token) return;
    const Clock::time_point now = Clock::now();
    out_->token_at.push_back(clock_seconds(now));
    if (out_->token_at.size() == 1) {
      out_->ttft_s = seconds(t0_, now);
      if (*first_) (*first_)();
    }
  }

  StreamResult* out_;
  Clock::time_point t0_;
  const std::function<void()>* first_;
  std::string buf_;
  bool done_ = false;
};

}  // namespace

StreamResult run_stream(const StreamRequest& r) {
  StreamResult out;
  nlohmann::json body = {
      {"model", r.thinking ? r.model : std::string("deepseek-chat")},
      {"messages", {{{"role", "user"}, {"content", r.prompt}}}},
      {"max_tokens", r.max_tokens},
      {"stream", true},
      {"stream_options", {{"include_usage", true}}},
  };
  if (r.thinking && !r.reasoning_effort.empty()) body["reasoning_effort"] = r.reasoning_effort;
  httplib::Client cli(r.host, r.port);
  cli.set_read_timeout(r.timeout_s, 0);
  cli.set_connection_timeout(10, 0);
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/chat/completions";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  if (!r.api_key.empty()) req.set_header("Authorization", "Bearer " + r.api_key);
  const Clock::time_point t0 = Clock::now();
  out.sent_at = clock_seconds(t0);
  SseReader sse(&out, t0, &r.on_first_token);
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    sse.feed(data, n);
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool sent = cli.send(req, res, err);
  const Clock::time_point end = Clock::now();
  out.total_s = seconds(t0, end);
  out.ended_at = clock_seconds(end);
  if (!sent) {
    out.error = "transport: " + httplib::to_string(err);
  } else if (res.status != 200) {
    out.error = "HTTP " + std::to_string(res.status);
  } else if (!sse.done() && out.error.empty()) {
    out.error = "the stream ended without [DONE]";
  }
  out.ok = out.error.empty();
  return out;
}

}  // namespace ds4::loadgen
