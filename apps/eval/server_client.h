// apps/eval/server_client.h: one case asked of a running ds4-server through its OpenAI chat API
// (`ds4-eval --server URL`: the path coding agents use).
// Owns: the URL's parsing, the request body (system and user messages, max_tokens, sampling, the
// think mode as `thinking` and `reasoning_effort`) and reading the answer. Does not own: grading or
// the report (run.cpp, src/eval).
#pragma once

#include <string>

#include "ds4/chat.h"
#include "ds4/sampling.h"
#include "ds4/status.h"

namespace ds4::evalapp {

struct ServerTarget {
  std::string host;
  int port = 0;
  std::string api_key;  // DS4_API_KEY from the environment, else none
};

// "http://HOST:PORT" (a trailing '/' allowed). Errors quote the text.
Result<ServerTarget> parse_server_url(const std::string& url);

struct ServerAnswer {
  std::string reasoning, content;
  int prompt_tokens = 0, completion_tokens = 0;
  std::string finish;
};

// Whether this build can reach a server (cpp-httplib was found).
bool server_mode_available();

Result<ServerAnswer> ask_server(const ServerTarget& target, const std::string& system,
                                const std::string& user, int max_tokens, chat::ThinkMode think,
                                const SamplingParams& sampling);

}  // namespace ds4::evalapp
