// src/http/request_parser.h: HTTP/1.1 requests from the bytes of one connection (RFC 9112).
// Owns: the framing of a request (request line, header fields, a body sized by Content-Length
// or sent chunked) and its limits, each answered with the status a client should see: a request
// line or header block too long (414 / 431), too many fields (431), a body over the limit (413,
// decided from Content-Length before any body byte is read), an unsupported transfer coding
// (501) or HTTP version (505), and 400 for everything malformed, including the request-smuggling
// shapes (Content-Length beside Transfer-Encoding, two different lengths, a field name followed
// by white space, folded lines).
// Bytes are fed as they arrive; a request ends where its body ends, so the next request of a
// pipelining client stays in the caller's buffer for the next parse.
// Does not own: the socket, deadlines, routing (listener.h, server.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ds4::http {

struct RequestLimits {
  size_t max_request_line = 8192;  // method, target and version
  // The request line and every header field together: Node.js's default bound; the clients we
  // serve send a few KiB.
  size_t max_head_bytes = 16384;
  size_t max_fields = 100;      // header fields
  size_t max_body = 64u << 20;  // decoded body bytes
};

struct HttpRequest {
  std::string method;
  std::string target;                                       // as sent
  std::string path;                                         // the target's path, percent-decoded
  std::string query;                                        // after '?', undecoded
  int minor = 1;                                            // HTTP/1.<minor>
  std::vector<std::pair<std::string, std::string>> fields;  // names lowercased, in order
  std::string body;
  bool keep_alive = true;        // the connection may carry another request after this one
  bool expect_continue = false;  // "Expect: 100-continue"

  // The first value of field `name` (lowercase), or "" when absent.
  std::string_view field(std::string_view name) const;
};

struct ParseError {
  int status = 400;
  std::string message;
};

class RequestParser {
 public:
  enum class State {
    kIdle,  // no byte of a request yet (blank lines before one are skipped)
    kHead,  // inside the request line or header fields
    kBody,  // the head is complete and body bytes are due
    kDone,  // a request is complete: take() it
    kError  // the connection cannot continue: error() says how to answer
  };

  explicit RequestParser(const RequestLimits& limits) : limits_(limits) {}

  // Parses from the front of `in`, the connection's unparsed bytes, and returns how many of them
  // are consumed (the caller drops them). Stops after the end of one request (kDone). While the
  // head is incomplete nothing is consumed: call again with `in` grown at its end.
  size_t feed(std::string_view in);

  State state() const { return state_; }
  // The request being read, once its head is complete (kBody, kDone).
  const HttpRequest& request() const { return request_; }
  // kDone: the request; the parser starts over (kIdle).
  HttpRequest take();
  const ParseError& error() const { return error_; }

 private:
  enum class Chunk { kSize, kData, kDataEnd, kTrailer };
  size_t parse_head(std::string_view head);
  size_t feed_chunked(std::string_view in);
  void fail(int status, std::string message);

  RequestLimits limits_;
  State state_ = State::kIdle;
  HttpRequest request_;
  ParseError error_;
  size_t scanned_ = 0;  // head bytes already searched for the blank line
  bool chunked_ = false;
  uint64_t remaining_ = 0;      // body bytes still due (Content-Length, or the current chunk)
  Chunk chunk_ = Chunk::kSize;  // chunked bodies: where in the chunk we are
  std::string line_;            // chunked bodies: the size or trailer line read so far
  size_t trailer_bytes_ = 0;
};

}  // namespace ds4::http
