// apps/eval/server_client.cpp: see server_client.h.
#include "server_client.h"

#include <nlohmann/json.hpp>

#if DS4_EVAL_HTTP
#include <httplib.h>
#endif

namespace ds4::evalapp {

Result<ServerTarget> parse_server_url(const std::string& url) {
  std::string rest = url;
  if (rest.rfind("http://", 0) != 0) {
    return Status::invalid_argument("--server '%s': give http://HOST:PORT", url.c_str());
  }
  rest = rest.substr(7);
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  const size_t colon = rest.rfind(':');
  ServerTarget t;
  if (colon == std::string::npos || colon == 0) {
    return Status::invalid_argument("--server '%s': give http://HOST:PORT", url.c_str());
  }
  t.host = rest.substr(0, colon);
  const std::string port = rest.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) < 1 ||
      std::stoi(port) > 65535) {
    return Status::invalid_argument("--server '%s': the port must be 1..65535", url.c_str());
  }
  t.port = std::stoi(port);
  if (const char* key = std::getenv("DS4_API_KEY")) t.api_key = key;
  return t;
}

#if DS4_EVAL_HTTP

bool server_mode_available() { return true; }

Result<ServerAnswer> ask_server(const ServerTarget& target, const std::string& system,
                                const std::string& user, int max_tokens, chat::ThinkMode think,
                                const SamplingParams& sampling) {
  using nlohmann::json;
  json body = {{"model", "deepseek-v4-flash"},
               {"messages",
                {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", user}}}},
               {"max_tokens", max_tokens},
               {"temperature", sampling.temperature},
               {"top_p", sampling.top_p},
               {"min_p", sampling.min_p},
               {"thinking", {{"type", think == chat::ThinkMode::kNone ? "disabled" : "enabled"}}}};
  if (sampling.top_k > 0) body["top_k"] = sampling.top_k;
  if (sampling.seed > 0) body["seed"] = sampling.seed;
  if (think == chat::ThinkMode::kMax) body["reasoning_effort"] = "max";
  httplib::Client cli(target.host, target.port);
  cli.set_connection_timeout(10, 0);
  cli.set_read_timeout(3600, 0);  // a long case may think for a long time
  httplib::Headers headers;
  if (!target.api_key.empty()) headers.emplace("Authorization", "Bearer " + target.api_key);
  const auto res = cli.Post("/v1/chat/completions", headers, body.dump(), "application/json");
  if (!res) {
    return Status::unavailable("the server at %s:%d: %s", target.host.c_str(), target.port,
                               httplib::to_string(res.error()).c_str());
  }
  const json j = json::parse(res->body, nullptr, false);
  if (res->status != 200 || j.is_discarded() || !j.is_object()) {
    return Status::unavailable("the server answered HTTP %d: %.300s", res->status,
                               res->body.c_str());
  }
  ServerAnswer a;
  try {
    const json& m = j.at("choices").at(0).at("message");
    if (m.contains("content") && m["content"].is_string()) a.content = m["content"];
    if (m.contains("reasoning_content") && m["reasoning_content"].is_string())
      a.reasoning = m["reasoning_content"];
    if (j.at("choices").at(0).contains("finish_reason") &&
        j["choices"][0]["finish_reason"].is_string())
      a.finish = j["choices"][0]["finish_reason"];
    a.prompt_tokens = j.at("usage").value("prompt_tokens", 0);
    a.completion_tokens = j.at("usage").value("completion_tokens", 0);
  } catch (const json::exception& e) {
    return Status::unavailable("the server's answer is not a chat completion: %s", e.what());
  }
  return a;
}

#else

bool server_mode_available() { return false; }

Result<ServerAnswer> ask_server(const ServerTarget&, const std::string&, const std::string&, int,
                                chat::ThinkMode, const SamplingParams&) {
  return Status::unimplemented("this ds4-eval was built without cpp-httplib: no --server");
}

#endif

}  // namespace ds4::evalapp
