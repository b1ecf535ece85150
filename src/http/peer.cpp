// src/http/peer.cpp: a connection's socket by its addresses, and the peek that sees it close.
#include "http/peer.h"

#include <dirent.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <memory>

namespace ds4::http {
namespace {

// Numeric host and port of an address, as httplib computes Request::remote_addr.
bool host_port(const sockaddr_storage& a, socklen_t len, std::string* host, int* port) {
  char h[NI_MAXHOST];
  char p[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, h, sizeof h, p, sizeof p,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return false;
  }
  *host = h;
  *port = std::atoi(p);
  return true;
}

bool matches(int fd, int local_port, const std::string& remote_addr, int remote_port) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  std::string host;
  int port = -1;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
      !host_port(a, len, &host, &port) || port != local_port) {
    return false;
  }
  len = sizeof a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
      !host_port(a, len, &host, &port)) {
    return false;  // the listening socket has no peer
  }
  return port == remote_port && host == remote_addr;
}

}  // namespace

std::optional<Peer> Peer::find(int local_port, const std::string& remote_addr, int remote_port) {
  if (local_port <= 0 || remote_port <= 0) return std::nullopt;
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir("/proc/self/fd"), closedir);
  if (!dir) return std::nullopt;
  while (const dirent* e = readdir(dir.get())) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(dir.get())) continue;
    if (matches(static_cast<int>(fd), local_port, remote_addr, remote_port)) {
      return Peer(static_cast<int>(fd));
    }
  }
  return std::nullopt;
}

bool Peer::gone() const {
  char c;
  const ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;
  if (n == 0) return true;
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace ds4::http
