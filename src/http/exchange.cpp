// src/http/exchange.cpp: response framing and deadline-bounded writes on a non-blocking socket.
#include "http/exchange.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdio>

namespace ds4::http {

const char* reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "";
  }
}

std::string response_head(int status, std::string_view content_type, long long content_length,
                          bool chunked, bool close, const Headers& defaults, const Headers& extra) {
  char line[64];
  std::snprintf(line, sizeof line, "HTTP/1.1 %d %s\r\n", status, reason_phrase(status));
  std::string head = line;
  if (!content_type.empty()) head.append("Content-Type: ").append(content_type).append("\r\n");
  // A 204 carries no body and says no length (RFC 9110 §8.6).
  if (content_length >= 0 && status != 204)
    head.append("Content-Length: " + std::to_string(content_length) + "\r\n");
  if (chunked) head.append("Transfer-Encoding: chunked\r\n");
  head.append(close ? "Connection: close\r\n" : "Connection: keep-alive\r\n");
  for (const Headers* hs : {&defaults, &extra}) {
    for (const auto& [name, value] : *hs)
      head.append(name).append(": ").append(value).append("\r\n");
  }
  head.append("\r\n");
  return head;
}

bool Exchange::write_all(std::string_view bytes) {
  using Clock = std::chrono::steady_clock;
  if (failed_) return false;
  // The deadline is for progress: a stream may last hours, but no single write may stall longer.
  auto deadline = Clock::now() + std::chrono::milliseconds(io_.write_timeout_ms);
  while (!bytes.empty()) {
    const ssize_t n = ::send(io_.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      deadline = Clock::now() + std::chrono::milliseconds(io_.write_timeout_ms);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd p{.fd = io_.fd, .events = POLLOUT, .revents = 0};
      if (left > 0 && ::poll(&p, 1, static_cast<int>(left)) >= 0) continue;
    }
    failed_ = true;
    return false;
  }
  return true;
}

bool Exchange::respond(int status, std::string_view content_type, std::string_view body,
                       const Headers& extra) {
  responded_ = true;
  const bool close = !request_.keep_alive;
  std::string out = response_head(status, content_type, static_cast<long long>(body.size()), false,
                                  close, *io_.default_headers, extra);
  if (request_.method != "HEAD") out.append(body);
  if (close) close_delimited_ = true;
  return write_all(out);
}

bool Exchange::begin_stream(int status, std::string_view content_type, const Headers& extra) {
  responded_ = true;
  streaming_ = true;
  // HTTP/1.0 has no chunked coding: the body ends where the connection does.
  close_delimited_ = request_.minor == 0 || !request_.keep_alive;
  const bool chunked = request_.minor == 1;
  return write_all(response_head(status, content_type, -1, chunked, close_delimited_,
                                 *io_.default_headers, extra));
}

bool Exchange::stream(std::string_view bytes) {
  if (bytes.empty()) return !failed_;
  if (request_.minor == 0) return write_all(bytes);
  char size[24];
  std::snprintf(size, sizeof size, "%zx\r\n", bytes.size());
  std::string chunk = size;
  chunk.append(bytes).append("\r\n");
  return write_all(chunk);
}

bool Exchange::end_stream() {
  streaming_ = false;
  if (request_.minor == 0) return !failed_;
  return write_all("0\r\n\r\n");
}

bool Exchange::peer_gone() const {
  char c;
  const ssize_t n = ::recv(io_.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;  // the client's FIN
  return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace ds4::http
