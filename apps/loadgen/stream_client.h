// apps/loadgen/stream_client.h: one streaming chat-completions request against a running server,
// timed from the client's side (issue 26 item 5).
// Owns: the HTTP request, the SSE parsing it needs (data lines, [DONE]) and the timestamps of the
// first token and of every later token event. Does not own: concurrency or statistics (main.cpp,
// stats.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace ds4::loadgen {

struct StreamResult {
  bool ok = false;
  std::string error;   // why not ok: transport, HTTP status, an error event
  double ttft_s = 0;   // request sent -> first reasoning or content delta
  double total_s = 0;  // request sent -> end of the stream
  // The same times on the shared clock (seconds of std::chrono::steady_clock since its epoch):
  // when the request was sent, each chunk carrying reasoning or content, the end of the stream.
  double sent_at = 0, ended_at = 0;
  std::vector<double> token_at;
  int prompt_tokens = 0;  // from the final usage chunk
  int completion_tokens = 0;
  int cached_tokens = 0;
  std::string finish_reason;

  // Seconds between consecutive token deltas.
  std::vector<double> gaps() const {
    std::vector<double> out;
    for (size_t k = 1; k < token_at.size(); ++k) out.push_back(token_at[k] - token_at[k - 1]);
    return out;
  }
};

struct StreamRequest {
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string api_key;
  std::string model = "deepseek-v4-flash";
  std::string prompt;
  int max_tokens = 256;
  bool thinking = false;  // false: "deepseek-chat" semantics (no reasoning) via thinking=disabled
  std::string reasoning_effort;  // thinking: "max" for the maximum effort, "" for the default
  int timeout_s = 600;
  std::function<void()> on_first_token;  // called once, from the request's thread; may be empty
};

StreamResult run_stream(const StreamRequest& r);

}  // namespace ds4::loadgen
