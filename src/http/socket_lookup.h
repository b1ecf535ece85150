// src/http/socket_lookup.h: this process's descriptor of a TCP socket, by its addresses.
// cpp-httplib 0.11.4 hands out neither a connection's socket (peer.h needs it to see a client
// leave) nor its listening socket (server.cpp widens its backlog), so a socket is found by its
// address pair: its inode in the kernel's connection tables (/proc/net/tcp, tcp6), then the
// descriptor whose /proc/self/fd link names that inode. Only files are read on the way (no fstat
// or getsockname of other descriptors, which other threads may be closing).
// Owns: nothing (the descriptor found stays its owner's).
#pragma once

#include <optional>
#include <string>

namespace ds4::http {

// The socket whose local port is local_port and whose peer is remote_addr:remote_port, in the
// numeric form httplib puts in a Request ("127.0.0.1", "::ffff:127.0.0.1", "::1"); a listening
// socket's peer is "0.0.0.0" (IPv4) or "::" (IPv6), port 0.
std::optional<int> find_socket_fd(int local_port, const std::string& remote_addr, int remote_port);

}  // namespace ds4::http
