// src/http/server.h: the HTTP side of ds4-server, the only module with sockets.
// Owns: the routes (features.md §1.3) over the HTTP/1.1 listener (listener.h: connections,
// deadlines, limits, workers), the optional Bearer check, CORS headers, SSE streaming with
// keepalive frames, turning a failed write (streaming) or a closed connection (non-streaming)
// into a cancelled request, the per-request log line, the trace file, the forced-output test
// hook, and stopping.
// Does not own: what serves each endpoint: its parser, collector and writer, response ids, error
// shape, the /health and count_tokens bodies (api/endpoints.h); the scheduler, the tokenizer,
// the replay map or the disk cache (borrowed; they must outlive the server).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "api/request_common.h"
#include "ds4/status.h"
#include "ds4/tokenizer.h"
#include "serve/disk_cache.h"
#include "serve/scheduler.h"

namespace ds4::http {

struct HttpOptions {
  std::string host = "127.0.0.1";  // "localhost" means 127.0.0.1
  int port = 8000;                 // 0: any free port (see HttpServer::port)
  std::string api_key;             // non-empty: /v1/* needs "Authorization: Bearer KEY"
  bool cors = false;
  size_t max_body_bytes = 64u << 20;  // larger bodies get 413
  int keepalive_ms = 2000;            // SSE comment after this long without an event
  int threads = 40;                   // requests handled at once (workers)
  int header_timeout_ms = 10000;      // a request's header must arrive within this (else 408)
  int body_timeout_ms = 10000;        // its body may stall (no byte arriving) this long
  int idle_timeout_ms = 5000;         // an idle keep-alive connection is closed after this
  int max_connections = 4096;         // open connections in all; more get 503
  int max_client_connections = 256;   // open connections from one client address
  std::string trace_path;             // non-empty: one JSON line per generation request
  std::string model_name = "DeepSeek V4";
  // Test hook (hidden flag --test-forced-output): requests that declare tools take these bytes'
  // tokens as their first output tokens (the i-th such request the i-th text, the last one
  // repeating); the model still evaluates each.
  std::vector<std::string> forced_output;
};

class HttpServer {
 public:
  // Sets up the routes and binds the socket. Errors: the address cannot be bound, the trace
  // file cannot be opened.
  static Result<std::unique_ptr<HttpServer>> bind(serve::Scheduler& scheduler, const Tokenizer& tok,
                                                  const api::ApiConfig& config,
                                                  const HttpOptions& options,
                                                  serve::ReplayMap* replay = nullptr,
                                                  serve::DiskCache* disk = nullptr);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;  // the bound port
  // Serves until stop(); returns after in-flight connections have ended.
  Status run();
  // Closes the listening socket and ends open streams; safe from any thread.
  void stop();

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ds4::http
