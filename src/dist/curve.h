// src/dist/curve.h: CURVE authentication and encryption of the distributed sockets (issue 49 item
// 6). A trusted cluster shares one CURVE keypair, the cluster key, kept in a key file: every
// server socket (the coordinator's ROUTER, a worker's PULL) speaks CURVE as that pair and lets in
// only clients that present the same pair, so a peer without the key file can neither connect nor
// read the traffic (CURVE encrypts every message after the handshake).
// Owns: the key file format, its reading (refusing files others may read, and malformed ones) and
// its writing (a new pair, atomically, mode 0600, never over an existing file); the ZAP handler
// thread of a ZeroMQ context (CurveAuthenticator); the socket options of a CURVE server and
// client; (route.h has the loopback test of an endpoint).
// Does not own: the contexts and sockets it secures, the flags naming the key file, the choice of
// which addresses need CURVE.
//
// Key file: text, one field per line, "#" lines and empty lines ignored:
//   public <the pair's public key, 40 Z85 characters>
//   secret <the pair's secret key, 40 Z85 characters>
// each field exactly once; the public key must be the secret key's. Mode 0600 (no group or other
// permission bits) or it is refused. `ds4 --dist-keygen FILE` writes one.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "ds4/status.h"

namespace ds4::dist {

inline constexpr size_t kCurveKeyBytes = 32;      // a CURVE key, binary
inline constexpr size_t kCurveKeyZ85Chars = 40;   // the same key in Z85 text
inline constexpr const char* kZapDomain = "ds4";  // the ZAP domain of our server sockets

struct ClusterKey {
  std::array<uint8_t, kCurveKeyBytes> public_key{};
  std::array<uint8_t, kCurveKeyBytes> secret_key{};

  std::string public_z85() const;  // for logs: the public half only
};

// Reads a key file. Errors: the file cannot be opened or is not a regular file, its mode lets
// group or others read or write it (naming the file and `chmod 600`), a line that is not one of
// the format's (naming the line), a missing or repeated field, a public key that is not the
// secret key's.
Result<ClusterKey> load_cluster_key(const std::string& path);

// Writes a new cluster key (zmq_curve_keypair) to `path`: a temporary file of mode 0600 in the
// same folder, renamed into place only when complete and never over an existing file. Errors:
// `path` exists, the folder is not writable, this libzmq has no CURVE.
Status write_cluster_key(const std::string& path);

// The ZAP handler of one ZeroMQ context (the ZAP protocol, RFC 27): a thread answering the
// context's handshakes at inproc://zeromq.zap.01. It accepts a CURVE client whose public key is
// the cluster's and denies everything else (another key, NULL, PLAIN) with status 400. Every
// context with server sockets needs one, started before those sockets bind: without a handler
// libzmq lets any CURVE client in that knows the server's public key.
// Destroy it before its context (declare it after the context): the thread stops within ~50 ms.
class CurveAuthenticator {
 public:
  // Binds the handler on `context` and starts its thread. Errors: another handler is bound on
  // this context.
  static Result<std::unique_ptr<CurveAuthenticator>> start(zmq::context_t& context,
                                                           const ClusterKey& key);
  ~CurveAuthenticator();
  CurveAuthenticator(const CurveAuthenticator&) = delete;
  CurveAuthenticator& operator=(const CurveAuthenticator&) = delete;

  // Handshakes answered so far (for logs and tests).
  uint64_t accepted() const { return accepted_.load(); }
  uint64_t denied() const { return denied_.load(); }

 private:
  CurveAuthenticator(zmq::context_t& context, const ClusterKey& key);
  void loop();

  zmq::socket_t handler_;  // REP; used by the thread only once it runs
  std::array<uint8_t, kCurveKeyBytes> allowed_{};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> denied_{0};
  std::thread thread_;
};

// Makes `socket` a CURVE server with the cluster's secret key, its handshakes checked by the
// context's CurveAuthenticator (ZAP domain kZapDomain). Call before bind().
void secure_server(zmq::socket_t& socket, const ClusterKey& key);
// Makes `socket` a CURVE client of a cluster server: the server's key is the cluster's public key
// and the client presents the cluster pair. Call before connect().
void secure_client(zmq::socket_t& socket, const ClusterKey& key);

}  // namespace ds4::dist
