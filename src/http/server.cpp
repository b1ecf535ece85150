// src/http/server.cpp: routes, auth, CORS, streaming and shutdown over the HTTP/1.1 listener.
#include "http/server.h"

#include <strings.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "api/endpoints.h"
#include "api/openai_response.h"
#include "base/log.h"
#include "http/listener.h"
#include "http/trace.h"

namespace ds4::http {
namespace {

using std::chrono::milliseconds;
constexpr const char* kJson = "application/json";
// Non-streaming requests wait in slices this long (nothing is sent meanwhile).
constexpr milliseconds kWaitSlice(1000);

// The error in the shape of the endpoint's protocol (OpenAI's where no endpoint applies).
void send_error(Exchange& ex, const api::ApiError& e, api::Endpoint ep = api::Endpoint::kChat,
                const Headers& extra = {}) {
  ex.respond(e.status, kJson, api::endpoint_error_body(ep, e), extra);
}

// The body of an error the transport answers itself (malformed request, deadline, limit).
std::string transport_error_body(int status, const std::string& message) {
  api::ApiError e{.status = status, .message = message};
  if (status >= 500) e.type = "server_error";
  switch (status) {
    case 408: e.code = "request_timeout"; break;
    case 413: e.code = "request_too_large"; break;
    case 414:
    case 431: e.code = "request_header_too_large"; break;
    case 503: e.code = "too_many_connections"; break;
    default: break;
  }
  return api::error_body(e);
}

// Compares in time independent of where the strings differ.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned diff = a.size() != b.size();
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) diff |= a[i] ^ b[i];
  return diff == 0;
}

// One stderr line per finished generation request (a single fprintf: lines never interleave).
void log_done(const std::string& id, api::Endpoint ep, bool stream, const serve::Event& done,
              std::chrono::steady_clock::time_point t0) {
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(
      stderr, "ds4-server: %s %s%s prompt=%d cached=%d completion=%d finish=%s %.2fs%s%s\n",
      id.c_str(), api::endpoint_name(ep), stream ? " stream" : "", done.usage.prompt_tokens,
      done.usage.cached_tokens, done.usage.completion_tokens, gen::to_string(done.finish), s,
      done.error.is_ok() ? "" : " error: ", done.error.is_ok() ? "" : done.error.message().c_str());
}

// One streaming response: pulls events from the ticket and writes SSE bytes until the end, the
// client leaving (a failed write) or the server stopping; the last two cancel the request.
void stream_events(Exchange& ex, serve::Ticket& ticket, api::StreamWriter& encoder,
                   milliseconds keepalive, TraceFile* trace, const std::string& id,
                   const std::string& model, const std::string& rendered, api::Endpoint ep,
                   std::chrono::steady_clock::time_point t0) {
  // The client sees bytes before the prefill ends (start, then a keepalive, in that order: the
  // writers number their events).
  std::string first = encoder.start();
  first += encoder.keepalive();
  if (!ex.begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}}) ||
      !ex.stream(first)) {
    return ticket.cancel();
  }
  while (true) {
    if (ex.stopping()) return ticket.cancel();
    auto e = ticket.next(keepalive);
    if (!e) {
      if (!ex.stream(encoder.keepalive())) return ticket.cancel();
      continue;
    }
    std::string out = encoder.encode(*e);
    // Send what else is ready in the same write.
    while (e->kind != serve::EventKind::kDone) {
      auto more = ticket.next(milliseconds(0));
      if (!more) break;
      e = std::move(more);
      out += encoder.encode(*e);
    }
    const bool done = e->kind == serve::EventKind::kDone;
    // The trace line is written before the client can see the end of the stream.
    if (done && trace) trace->write(id, api::endpoint_name(ep), model, true, rendered, *e);
    if (done) log_done(id, ep, true, *e, t0);
    if (!ex.stream(out)) return ticket.cancel();
    if (done) {
      ex.end_stream();
      return;
    }
  }
}

}  // namespace

struct HttpServer::Impl {
  serve::Scheduler* scheduler;
  std::unique_ptr<api::Endpoints> endpoints;
  HttpOptions options;
  std::vector<std::vector<TokenId>> forced;  // the test hook's outputs, in order
  std::atomic<size_t> forced_next{0};
  std::unique_ptr<TraceFile> trace;
  std::unique_ptr<Listener> listener;

  api::ModelCard card() const {
    return {.name = options.model_name, .n_ctx = endpoints->config().n_ctx};
  }

  void generate(api::Endpoint ep, Exchange& ex) {
    const auto t0 = std::chrono::steady_clock::now();
    auto result = endpoints->prepare(ep, ex.request().body);
    if (auto* e = std::get_if<api::ApiError>(&result)) return send_error(ex, *e, ep);
    api::PreparedRequest& prepared = std::get<api::PreparedRequest>(result);
    serve::Request& sr = prepared.request;
    if (sr.output.tools && !forced.empty()) {
      sr.output.forced = forced[std::min(forced_next.fetch_add(1), forced.size() - 1)];
    }
    const std::string rendered = trace ? sr.rendered : std::string();
    const std::string& id = prepared.meta.id;
    const std::string& model = prepared.meta.model;
    auto ticket = scheduler->submit(std::move(sr));
    if (!ticket.is_ok()) {
      const api::ApiError e = api::from_status(ticket.status());
      Headers extra;
      if (e.status == 429 || e.status == 503) extra.emplace_back("Retry-After", "1");
      return send_error(ex, e, ep, extra);
    }
    if (prepared.stream) {
      auto encoder = api::make_writer(prepared.meta, std::move(prepared.context));
      return stream_events(ex, **ticket, *encoder, milliseconds(options.keepalive_ms), trace.get(),
                           id, model, rendered, ep, t0);
    }
    // Nothing is written until the end, so no failed write tells us the client left: the
    // scheduler asks the socket at each step instead.
    (*ticket)->set_probe([&ex] { return ex.peer_gone() || ex.stopping(); });
    api::Collector c = api::make_collector(prepared.meta, std::move(prepared.context));
    serve::Event last;
    while (!c.done()) {
      if (auto e = (*ticket)->next(kWaitSlice)) {
        c.add(*e);
        if (e->kind == serve::EventKind::kDone) last = std::move(*e);
      }
    }
    (*ticket)->set_probe(nullptr);
    if (trace) trace->write(id, api::endpoint_name(ep), model, false, rendered, last);
    log_done(id, ep, false, last, t0);
    ex.respond(c.status(), kJson, c.body());
  }

  // "Authorization: Bearer KEY" (the scheme's case does not matter, RFC 9110 §11.1), else
  // Anthropic's "x-api-key: KEY". True when the request may go on.
  bool authorized(Exchange& ex) {
    const HttpRequest& req = ex.request();
    if (options.api_key.empty() || req.method == "OPTIONS" || !req.path.starts_with("/v1/")) {
      return true;
    }
    std::string given(req.field("authorization"));
    if (given.size() > 7 && strncasecmp(given.c_str(), "bearer ", 7) == 0) {
      given.erase(0, given.find_first_not_of(' ', 7));
    } else {
      given = req.field("x-api-key");
    }
    if (same_secret(given, options.api_key)) return true;
    send_error(
        ex,
        api::ApiError{
            .status = 401, .message = "invalid or missing API key", .code = "invalid_api_key"},
        req.path.starts_with("/v1/messages") ? api::Endpoint::kMessages : api::Endpoint::kChat);
    return false;
  }

  void handle(Exchange& ex) {
    const HttpRequest& req = ex.request();
    if (req.method == "OPTIONS") return void(ex.respond(204, "", ""));
    if (!authorized(ex)) return;
    const bool get = req.method == "GET" || req.method == "HEAD";
    const bool post = req.method == "POST";
    const std::string& path = req.path;
    const auto wrong_method = [&](const char* allow) {
      send_error(ex,
                 api::ApiError{.status = 405,
                               .message = req.method + " is not allowed on " + path +
                                          " (allowed: " + allow + ")",
                               .code = "method_not_allowed"},
                 api::Endpoint::kChat, {{"Allow", allow}});
    };
    const auto generation = [&](api::Endpoint ep) {
      if (!post) return wrong_method("POST");
      generate(ep, ex);
    };
    if (path == "/health") {
      if (!get) return wrong_method("GET, HEAD");
      ex.respond(200, kJson, endpoints->health(scheduler->stats()));
    } else if (path == "/v1/models") {
      if (!get) return wrong_method("GET, HEAD");
      ex.respond(200, kJson, api::models_list_json(card()));
    } else if (path.starts_with("/v1/models/") && path.size() > 11) {
      if (!get) return wrong_method("GET, HEAD");
      const std::string name = path.substr(11);
      const std::string body = api::model_json(name, card());
      if (body.empty()) {
        return send_error(
            ex, api::not_found("The model '" + name + "' does not exist", "model_not_found"));
      }
      ex.respond(200, kJson, body);
    } else if (path == "/v1/chat/completions") {
      generation(api::Endpoint::kChat);
    } else if (path == "/v1/completions") {
      generation(api::Endpoint::kCompletions);
    } else if (path == "/v1/messages") {  // Claude Code posts /v1/messages?beta=true
      generation(api::Endpoint::kMessages);
    } else if (path == "/v1/responses") {
      generation(api::Endpoint::kResponses);
    } else if (path == "/v1/messages/count_tokens") {
      if (!post) return wrong_method("POST");
      auto body = endpoints->count_tokens(req.body);
      if (auto* e = std::get_if<api::ApiError>(&body)) {
        return send_error(ex, *e, api::Endpoint::kMessages);
      }
      ex.respond(200, kJson, std::get<std::string>(body));
    } else {
      send_error(ex, api::not_found("unknown endpoint " + req.method + " " + path));
    }
  }
};

Result<std::unique_ptr<HttpServer>> HttpServer::bind(
    serve::Scheduler& scheduler, const Tokenizer& tok, const api::ApiConfig& config,
    const HttpOptions& options, serve::ReplayMap* replay, serve::DiskCache* disk) {
  auto impl = std::make_unique<Impl>();
  impl->endpoints = std::make_unique<api::Endpoints>(tok, config, replay, disk);
  for (const auto& text : options.forced_output) {
    impl->forced.push_back(tok.encode(text, SpecialTokens::kRecognize));
  }
  impl->scheduler = &scheduler;
  impl->options = options;
  if (!options.trace_path.empty()) {
    DS4_ASSIGN_OR_RETURN(impl->trace, TraceFile::open(options.trace_path));
  }
  ListenerOptions lo{.host = options.host == "localhost" ? "127.0.0.1" : options.host,
                     .port = options.port,
                     .limits = {.max_body = options.max_body_bytes},
                     .workers = options.threads,
                     .header_timeout_ms = options.header_timeout_ms,
                     .body_timeout_ms = options.body_timeout_ms,
                     .idle_timeout_ms = options.idle_timeout_ms,
                     .max_connections = options.max_connections,
                     .max_per_client = options.max_client_connections};
  if (options.cors) {
    lo.default_headers = {{"Access-Control-Allow-Origin", "*"},
                          {"Access-Control-Allow-Methods", "GET, POST, OPTIONS"},
                          {"Access-Control-Allow-Headers", "*"}};
  }
  Impl* self = impl.get();
  DS4_ASSIGN_OR_RETURN(impl->listener,
                       Listener::bind(
                           lo, [self](Exchange& ex) { self->handle(ex); }, transport_error_body));
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() = default;

int HttpServer::port() const { return impl_->listener->port(); }

Status HttpServer::run() {
  impl_->listener->run();
  return Status::ok();
}

void HttpServer::stop() { impl_->listener->stop(); }

}  // namespace ds4::http
