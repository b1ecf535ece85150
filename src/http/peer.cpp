// src/http/peer.cpp: a connection's socket by its addresses, and the peek that sees it close.
#include "http/peer.h"

#include <sys/socket.h>

#include <cerrno>

#include "http/socket_lookup.h"

namespace ds4::http {

std::optional<Peer> Peer::find(int local_port, const std::string& remote_addr, int remote_port) {
  if (remote_port <= 0) return std::nullopt;
  // The descriptor found is this connection's, open until the handler returns.
  const auto fd = find_socket_fd(local_port, remote_addr, remote_port);
  if (!fd) return std::nullopt;
  return Peer(*fd);
}

bool Peer::gone() const {
  char c;
  const ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;
  if (n == 0) return true;
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace ds4::http
