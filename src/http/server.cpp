// src/http/server.cpp: routes, auth, CORS, limits, streaming and shutdown on cpp-httplib.
#include "http/server.h"

#include <httplib.h>
#include <strings.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "api/endpoints.h"
#include "api/openai_response.h"
#include "base/log.h"
#include "http/peer.h"
#include "http/socket_lookup.h"
#include "http/trace.h"

namespace ds4::http {
namespace {

// cpp-httplib 0.11.4 listens with a backlog of 5 connections: a burst of clients connecting at
// once (a load generator, an agent's parallel sub-agents) overflowed it, and the connections the
// kernel could not queue failed after their SYN retry ("transport: Read" for 46 of 64 clients
// on loopback). listen() on a listening socket sets its backlog anew (Linux), so the server's
// socket, found by its port, gets the system's maximum. Runs before any connection is served.
void widen_backlog(int port) {
  for (const char* any : {"0.0.0.0", "::"}) {
    if (const auto fd = find_socket_fd(port, any, 0)) {
      if (::listen(*fd, SOMAXCONN) != 0) {
        DS4_LOG_WARN("cannot widen the listen backlog of port %d: %s", port, std::strerror(errno));
      }
      return;
    }
  }
  DS4_LOG_WARN("listening socket of port %d not found: its backlog stays at 5 connections", port);
}

using std::chrono::milliseconds;
constexpr const char* kJson = "application/json";
// Non-streaming requests wait in slices this long (nothing is sent meanwhile).
constexpr milliseconds kWaitSlice(1000);
constexpr time_t kKeepAliveSeconds = 2;

// The error in the shape of the endpoint's protocol (OpenAI's where no endpoint applies).
void send_error(httplib::Response& res, const api::ApiError& e,
                api::Endpoint ep = api::Endpoint::kChat) {
  res.status = e.status;
  res.set_content(api::endpoint_error_body(ep, e), kJson);
}

// Compares in time independent of where the strings differ.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned diff = a.size() != b.size();
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) diff |= a[i] ^ b[i];
  return diff == 0;
}

// A POST body through its content reader, in one allocation of the announced size (within the
// limit httplib enforces as it reads). nullopt: the status is set (413 past the limit, 400 for a
// body that did not arrive whole) and the error handler writes the response.
std::optional<std::string> read_body(const httplib::Request& req, httplib::Response& res,
                                     const httplib::ContentReader& read, size_t max_bytes) {
  std::string body;
  const uint64_t announced = req.get_header_value<uint64_t>("Content-Length");
  if (announced <= max_bytes) body.reserve(static_cast<size_t>(announced));
  const bool whole = read([&](const char* data, size_t n) {
    body.append(data, n);
    return true;
  });
  if (whole) return body;
  if (res.status != 413) res.status = 400;
  return std::nullopt;
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

// One streaming response: pulls events from the ticket and writes SSE bytes.
struct Stream {
  std::shared_ptr<serve::Ticket> ticket;
  std::unique_ptr<api::StreamWriter> encoder;
  milliseconds keepalive;
  TraceFile* trace;
  std::string id, model, rendered;
  api::Endpoint endpoint;
  std::chrono::steady_clock::time_point t0;
  bool started = false;

  bool pump(httplib::DataSink& sink) {
    std::string out;
    if (!started) {
      started = true;
      out = encoder->start();
      out += encoder->keepalive();  // the client sees bytes before the prefill ends
      return write(sink, out);
    }
    auto e = ticket->next(keepalive);
    if (!e) return write(sink, encoder->keepalive());
    out = encoder->encode(*e);
    // Send what else is ready in the same write.
    while (e->kind != serve::EventKind::kDone) {
      auto more = ticket->next(milliseconds(0));
      if (!more) break;
      e = std::move(more);
      out += encoder->encode(*e);
    }
    const bool done = e->kind == serve::EventKind::kDone;
    // The trace line is written before the client can see the end of the stream.
    if (done && trace) trace->write(id, api::endpoint_name(endpoint), model, true, rendered, *e);
    if (done) log_done(id, endpoint, true, *e, t0);
    if (!out.empty() && !write(sink, out)) return false;
    if (done) sink.done();
    return true;
  }
  bool write(httplib::DataSink& sink, const std::string& bytes) {
    if (sink.write(bytes.data(), bytes.size())) return true;
    ticket->cancel();  // the client is gone: stop generating for it
    return false;
  }
};

}  // namespace

struct HttpServer::Impl {
  serve::Scheduler* scheduler;
  std::unique_ptr<api::Endpoints> endpoints;
  HttpOptions options;
  std::vector<std::vector<TokenId>> forced;  // the test hook's outputs, in order
  std::atomic<size_t> forced_next{0};
  std::unique_ptr<TraceFile> trace;
  httplib::Server server;
  int port = 0;

  api::ModelCard card() const {
    return {.name = options.model_name, .n_ctx = endpoints->config().n_ctx};
  }

  void generate(api::Endpoint ep, const httplib::Request& req, const std::string& body,
                httplib::Response& res) {
    const auto t0 = std::chrono::steady_clock::now();
    auto result = endpoints->prepare(ep, body);
    if (auto* e = std::get_if<api::ApiError>(&result)) return send_error(res, *e, ep);
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
      if (e.status == 429 || e.status == 503) res.set_header("Retry-After", "1");
      return send_error(res, e, ep);
    }
    if (!prepared.stream) {
      // Nothing is written until the end, so no failed write tells us the client left: the
      // scheduler asks the socket at each step instead (peer.h).
      if (auto peer = Peer::find(req.local_port, req.remote_addr, req.remote_port)) {
        (*ticket)->set_probe([p = *peer] { return p.gone(); });
      }
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
      res.status = c.status();
      res.set_content(c.body(), kJson);
      return;
    }
    auto stream = std::make_shared<Stream>(
        Stream{.ticket = *ticket,
               .encoder = api::make_writer(prepared.meta, std::move(prepared.context)),
               .keepalive = milliseconds(options.keepalive_ms),
               .trace = trace.get(),
               .id = id,
               .model = model,
               .rendered = rendered,
               .endpoint = ep,
               .t0 = t0});
    res.set_header("Cache-Control", "no-cache");
    auto pump = [stream](size_t, httplib::DataSink& sink) { return stream->pump(sink); };
    auto done = [stream](bool success) {
      if (!success) stream->ticket->cancel();  // connection dropped or server stopping
    };
    if (req.version == "HTTP/1.0") {
      // HTTP/1.0 has no chunked encoding: the stream's end is the connection's.
      res.set_header("Connection", "close");
      res.set_content_provider("text/event-stream", pump, done);
    } else {
      res.set_chunked_content_provider("text/event-stream", pump, done);
    }
  }

  void count_tokens(const std::string& request_body, httplib::Response& res) {
    auto body = endpoints->count_tokens(request_body);
    if (auto* e = std::get_if<api::ApiError>(&body)) {
      return send_error(res, *e, api::Endpoint::kMessages);
    }
    res.set_content(std::get<std::string>(body), kJson);
  }

  httplib::Server::HandlerResponse check(const httplib::Request& req, httplib::Response& res) {
    if (options.api_key.empty() || req.method == "OPTIONS" || !req.path.starts_with("/v1/")) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    // "Authorization: Bearer KEY" (the scheme's case does not matter, RFC 9110 §11.1), else
    // Anthropic's "x-api-key: KEY".
    std::string given = req.get_header_value("Authorization");
    if (given.size() > 7 && strncasecmp(given.c_str(), "bearer ", 7) == 0) {
      given.erase(0, given.find_first_not_of(' ', 7));
    } else {
      given = req.get_header_value("x-api-key");
    }
    if (same_secret(given, options.api_key)) return httplib::Server::HandlerResponse::Unhandled;
    send_error(
        res,
        api::ApiError{
            .status = 401, .message = "invalid or missing API key", .code = "invalid_api_key"},
        req.path.starts_with("/v1/messages") ? api::Endpoint::kMessages : api::Endpoint::kChat);
    return httplib::Server::HandlerResponse::Handled;
  }

  void routes() {
    using httplib::Request;
    using httplib::Response;
    server.set_pre_routing_handler([this](const Request& q, Response& r) { return check(q, r); });
    server.Get("/health", [this](const Request&, Response& res) {
      res.set_content(endpoints->health(scheduler->stats()), kJson);
    });
    server.Get("/v1/models", [this](const Request&, Response& res) {
      res.set_content(api::models_list_json(card()), kJson);
    });
    server.Get(R"(/v1/models/(.+))", [this](const Request& req, Response& res) {
      const std::string body = api::model_json(req.matches[1].str(), card());
      if (body.empty()) {
        return send_error(res,
                          api::not_found("The model '" + req.matches[1].str() + "' does not exist",
                                         "model_not_found"));
      }
      res.set_content(body, kJson);
    });
    // POST bodies are read by the handlers (a content reader) whatever their Content-Type: httplib
    // would parse a form-urlencoded body itself (`curl -d @file` sends that type) and refuse one
    // over 8 KiB with a 413, whatever --max-body says. The body limit still holds (413).
    const auto post = [this](const char* path, auto handle) {
      server.Post(path, [this, handle](const Request& req, Response& res,
                                       const httplib::ContentReader& read) {
        if (auto body = read_body(req, res, read, options.max_body_bytes)) handle(req, *body, res);
      });
    };
    const auto gen = [this](api::Endpoint ep) {
      return [this, ep](const Request& req, const std::string& body, Response& res) {
        generate(ep, req, body, res);
      };
    };
    post("/v1/chat/completions", gen(api::Endpoint::kChat));
    post("/v1/completions", gen(api::Endpoint::kCompletions));
    // Claude Code posts /v1/messages?beta=true: httplib matches the path without the query.
    post("/v1/messages", gen(api::Endpoint::kMessages));
    post("/v1/messages/count_tokens", [this](const Request&, const std::string& body,
                                             Response& res) { count_tokens(body, res); });
    post("/v1/responses", gen(api::Endpoint::kResponses));
    server.Options(R"(.*)", [](const Request&, Response& res) { res.status = 204; });
    // Statuses httplib sets itself (404 no route, 413 body too large, 400 bad request) get an
    // OpenAI-style body; handlers' own errors already have one.
    server.set_error_handler(
        httplib::Server::HandlerWithResponse([](const Request& req, Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
          api::ApiError e{.status = res.status, .message = "bad HTTP request"};
          if (res.status == 404)
            e = api::not_found("unknown endpoint " + req.method + " " + req.path);
          if (res.status == 413) {
            e.message = "request body is larger than the limit";
            e.code = "request_too_large";
          }
          send_error(res, e);
          return httplib::Server::HandlerResponse::Handled;
        }));
    server.set_exception_handler([](const Request&, Response& res, std::exception_ptr) {
      send_error(res,
                 api::ApiError{.status = 500, .message = "internal error", .type = "server_error"});
    });
    if (options.cors) {
      server.set_default_headers({{"Access-Control-Allow-Origin", "*"},
                                  {"Access-Control-Allow-Methods", "GET, POST, OPTIONS"},
                                  {"Access-Control-Allow-Headers", "*"}});
    }
    server.set_payload_max_length(options.max_body_bytes);
    // An idle keep-alive connection holds its thread this long, and stop() waits for it.
    server.set_keep_alive_timeout(kKeepAliveSeconds);
    const int threads = options.threads;
    server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
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
  impl->routes();
  const std::string host = options.host == "localhost" ? "127.0.0.1" : options.host;
  if (options.port == 0) {
    impl->port = impl->server.bind_to_any_port(host);
    if (impl->port <= 0) return Status::unavailable("cannot bind %s on any port", host.c_str());
  } else {
    if (!impl->server.bind_to_port(host, options.port)) {
      return Status::unavailable("cannot bind %s:%d (in use, or not a local address)", host.c_str(),
                                 options.port);
    }
    impl->port = options.port;
  }
  widen_backlog(impl->port);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() = default;

int HttpServer::port() const { return impl_->port; }

Status HttpServer::run() {
  if (!impl_->server.listen_after_bind() && impl_->server.is_running()) {
    return Status::io_error("the listening socket failed");
  }
  return Status::ok();
}

void HttpServer::stop() { impl_->server.stop(); }

}  // namespace ds4::http
