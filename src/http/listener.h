// src/http/listener.h: ds4-server's HTTP/1.1 connections: accepting, reading and answering.
// Owns: the listening socket, every connection socket while it is being read, one event thread
// (epoll) that reads every connection's requests without blocking, and the worker threads that
// run complete requests. A client holds a worker only from the end of its request's body to the
// end of the response, so clients that send slowly (or not at all) cost a socket, not a thread:
// each request has a header deadline and a body deadline, an idle keep-alive connection is closed
// after its idle timeout, each client address may hold a bounded number of connections, and the
// server a bounded total. Pipelined requests on a connection are answered in order.
// Does not own: what a request means (the Handler), the bodies of the errors the transport
// answers itself (ErrorBody, so that they take the API's JSON shape).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "ds4/status.h"
#include "http/exchange.h"
#include "http/request_parser.h"

namespace ds4::http {

struct ListenerOptions {
  std::string host = "127.0.0.1";  // a numeric IPv4 or IPv6 address
  int port = 0;                    // 0: any free port
  RequestLimits limits;
  int workers = 40;               // requests handled at once
  int header_timeout_ms = 10000;  // from a request's first byte to the end of its header
  int body_timeout_ms = 10000;    // the longest a body may stall (no byte arriving)
  int idle_timeout_ms = 5000;     // a keep-alive connection waiting for its next request
  int write_timeout_ms = 30000;   // a response write making no progress
  int max_connections = 4096;     // open connections in all
  int max_per_client = 256;       // open connections from one client address
  Headers default_headers;        // sent with every response (CORS)
};

// Handles one complete request; it must answer through the exchange (else a 500 is sent).
using Handler = std::function<void(Exchange&)>;
// The JSON body of an error the transport answers itself (a malformed request, a deadline, a
// connection limit).
using ErrorBody = std::function<std::string(int status, const std::string& message)>;

class Listener {
 public:
  // Binds and listens. Errors: the address is not numeric or cannot be bound.
  static Result<std::unique_ptr<Listener>> bind(const ListenerOptions& options, Handler handler,
                                                ErrorBody error_body);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  int port() const;
  // Serves until stop(); returns once every connection is closed and the workers are joined.
  void run();
  // Stops accepting and reading, closes idle connections and tells handlers to end
  // (Exchange::stopping); safe from any thread, also before run().
  void stop();

  struct Impl;

 private:
  explicit Listener(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ds4::http
