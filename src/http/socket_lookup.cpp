// src/http/socket_lookup.cpp: a TCP socket's descriptor from /proc (socket_lookup.h).
#include "http/socket_lookup.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string_view>

namespace ds4::http {
namespace {

// "0100007F:1F90" (the kernel's /proc/net/tcp form: the address's bytes as 32-bit words in host
// order, then the port) as the numeric host and port httplib puts in a Request.
bool parse_endpoint(const std::string& field, std::string* host, int* port) {
  const size_t colon = field.find(':');
  if (colon == std::string::npos) return false;
  const std::string hex = field.substr(0, colon);
  *port = static_cast<int>(std::strtol(field.c_str() + colon + 1, nullptr, 16));
  unsigned char bytes[16];
  if (hex.size() != 8 && hex.size() != 32) return false;
  for (size_t w = 0; w < hex.size() / 8; ++w) {
    const auto v = static_cast<uint32_t>(std::strtoul(hex.substr(w * 8, 8).c_str(), nullptr, 16));
    std::memcpy(bytes + 4 * w, &v, 4);
  }
  char text[INET6_ADDRSTRLEN];
  const int family = hex.size() == 8 ? AF_INET : AF_INET6;
  if (inet_ntop(family, bytes, text, sizeof text) == nullptr) return false;
  *host = text;
  return true;
}

// The inode of the TCP socket with these addresses, from the kernel's connection tables (read
// as files: nothing here touches another thread's descriptors, which may be closing meanwhile).
std::optional<unsigned long> socket_inode(int local_port, const std::string& remote_addr,
                                          int remote_port) {
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string slot, local, remote, state, queues, timer, retr, uid, timeout;
      unsigned long inode = 0;
      if (!(f >> slot >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >>
            inode)) {
        continue;
      }
      std::string lhost, rhost;
      int lport = -1, rport = -1;
      if (!parse_endpoint(local, &lhost, &lport) || lport != local_port) continue;
      if (!parse_endpoint(remote, &rhost, &rport) || rport != remote_port) continue;
      // httplib spells an IPv4 client of a dual-stack socket "::ffff:a.b.c.d"; the table too.
      if (rhost == remote_addr && inode != 0) return inode;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<int> find_socket_fd(int local_port, const std::string& remote_addr, int remote_port) {
  if (local_port <= 0 || remote_port < 0) return std::nullopt;
  const auto inode = socket_inode(local_port, remote_addr, remote_port);
  if (!inode) return std::nullopt;
  const std::string want = "socket:[" + std::to_string(*inode) + "]";
  // Names are read from /proc (readlink); no descriptor is used here.
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir("/proc/self/fd"), closedir);
  if (!dir) return std::nullopt;
  while (const dirent* e = readdir(dir.get())) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    char target[64];
    const std::string path = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t n = readlink(path.c_str(), target, sizeof target - 1);
    if (n <= 0) continue;
    if (std::string_view(target, static_cast<size_t>(n)) == want) return static_cast<int>(fd);
  }
  return std::nullopt;
}

}  // namespace ds4::http
