// src/http/exchange.h: one request and its response on a connection, as a handler sees them.
// Owns: the response's framing (status line, Content-Length or chunked, or a body that the
// connection's end delimits for HTTP/1.0 clients), the default headers every response carries,
// writing with a deadline (a client that stops reading cannot hold a worker past it), and
// whether the connection can carry the next request afterwards.
// Does not own: the socket (listener.h lends it for the exchange), what the response says.
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/request_parser.h"

namespace ds4::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

// The status line and header block of a response. content_length < 0: no Content-Length (a
// chunked or connection-delimited body).
std::string response_head(int status, std::string_view content_type, long long content_length,
                          bool chunked, bool close, const Headers& defaults, const Headers& extra);

// The reason phrase of a status code ("OK", "Not Found"; "" for codes without one here).
const char* reason_phrase(int status);

class Exchange {
 public:
  struct Io {
    int fd = -1;
    int write_timeout_ms = 30000;
    const Headers* default_headers = nullptr;
    const std::atomic<bool>* stopping = nullptr;
    std::string remote_addr;
    int remote_port = 0;
  };
  Exchange(const HttpRequest& request, Io io) : request_(request), io_(std::move(io)) {}
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  const HttpRequest& request() const { return request_; }
  const std::string& remote_addr() const { return io_.remote_addr; }
  int remote_port() const { return io_.remote_port; }

  // A whole response (Content-Length; no body bytes for HEAD). False: the client is gone.
  bool respond(int status, std::string_view content_type, std::string_view body,
               const Headers& extra = {});
  // A streamed response: chunked for HTTP/1.1, ended by closing the connection for HTTP/1.0.
  bool begin_stream(int status, std::string_view content_type, const Headers& extra = {});
  bool stream(std::string_view bytes);  // false: the client is gone (or stopped reading)
  bool end_stream();

  // True once the client closed or reset the connection (a check that does not block; bytes of
  // a pipelined next request mean it is still there).
  bool peer_gone() const;
  // True once the server is stopping: long responses end early.
  bool stopping() const { return io_.stopping != nullptr && io_.stopping->load(); }

  bool responded() const { return responded_; }
  // Whether the connection can carry another request after this exchange.
  bool reusable() const { return responded_ && !failed_ && !close_delimited_ && !streaming_; }

 private:
  bool write_all(std::string_view bytes);

  const HttpRequest& request_;
  Io io_;
  bool responded_ = false;
  bool streaming_ = false;  // a stream begun and not yet ended
  bool close_delimited_ = false;
  bool failed_ = false;
};

}  // namespace ds4::http
