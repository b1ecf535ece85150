// src/http/peer.h: whether the client of a request the handler is still answering has left,
// for responses that write nothing until they end (non-streaming generation).
// Owns: the check. The connection's socket is found by its address pair (socket_lookup.h: the
// local port, the peer's numeric address and port, as httplib itself fills them in the Request);
// cpp-httplib 0.11.4 gives a handler neither its socket nor a liveness call
// (DataSink::is_writable only selects for write, which a peer's FIN does not change). The check
// peeks without blocking: 0 bytes is the client's FIN, a reset is an error; a pipelined next
// request (bytes waiting) or nothing yet means still there.
// Does not own: the socket (httplib closes it), cancelling (the ticket's probe).
#pragma once

#include <optional>
#include <string>

namespace ds4::http {

class Peer {
 public:
  // The connection with these addresses, if its socket is found.
  static std::optional<Peer> find(int local_port, const std::string& remote_addr, int remote_port);
  // True once the client closed or reset the connection.
  bool gone() const;

 private:
  explicit Peer(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace ds4::http
