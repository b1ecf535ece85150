// src/dist/curve.cpp: the cluster key file, the ZAP handler thread and the CURVE socket options.
#include "dist/curve.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <vector>
#include <zmq_addon.hpp>

namespace ds4::dist {
namespace {

constexpr auto kPoll = std::chrono::milliseconds(50);
constexpr size_t kMaxKeyFileBytes = 4096;  // a key file is ~100 bytes; more is not one
constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";  // fixed by RFC 27

// Z85 text of 40 characters -> 32 bytes; false when it is not valid Z85.
bool z85_decode(const std::string& text, std::array<uint8_t, kCurveKeyBytes>& out) {
  return text.size() == kCurveKeyZ85Chars && zmq_z85_decode(out.data(), text.c_str()) != nullptr;
}

std::string z85_encode(const std::array<uint8_t, kCurveKeyBytes>& key) {
  char text[kCurveKeyZ85Chars + 1] = {};
  zmq_z85_encode(text, key.data(), key.size());
  return text;
}

// Reads at most kMaxKeyFileBytes + 1 bytes of `fd`.
Result<std::string> read_all(int fd, const std::string& path) {
  std::string text;
  char buf[512];
  while (text.size() <= kMaxKeyFileBytes) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return Status::io_error("cluster key '%s': cannot read: %s", path.c_str(), strerror(errno));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  if (text.size() > kMaxKeyFileBytes) {
    return Status::invalid_file("cluster key '%s': larger than %zu bytes: not a key file",
                                path.c_str(), kMaxKeyFileBytes);
  }
  return text;
}

Result<ClusterKey> parse_key_file(const std::string& text, const std::string& path) {
  ClusterKey key;
  bool have_public = false, have_secret = false;
  size_t line_no = 0, begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.find(' ');
    const std::string field = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    const bool is_public = field == "public", is_secret = field == "secret";
    if (!is_public && !is_secret) {
      return Status::invalid_file(
          "cluster key '%s' line %zu: expected 'public <key>' or 'secret <key>' (40 Z85 "
          "characters each), found '%.20s'",
          path.c_str(), line_no, field.c_str());
    }
    bool& seen = is_public ? have_public : have_secret;
    if (seen) {
      return Status::invalid_file("cluster key '%s' line %zu: a second '%s' line", path.c_str(),
                                  line_no, field.c_str());
    }
    if (!z85_decode(value, is_public ? key.public_key : key.secret_key)) {
      return Status::invalid_file(
          "cluster key '%s' line %zu: the %s key is not 40 Z85 characters (%zu characters)",
          path.c_str(), line_no, field.c_str(), value.size());
    }
    seen = true;
  }
  if (!have_public || !have_secret) {
    return Status::invalid_file(
        "cluster key '%s': no '%s' line (write a key file with ds4 "
        "--dist-keygen FILE)",
        path.c_str(), have_public ? "secret" : "public");
  }
  char derived[kCurveKeyZ85Chars + 1] = {};
  const std::string secret = z85_encode(key.secret_key);
  if (zmq_curve_public(derived, secret.c_str()) != 0) {
    return Status::unimplemented(
        "cluster key '%s': this libzmq has no CURVE (zmq_curve_public: %s)", path.c_str(),
        zmq_strerror(zmq_errno()));
  }
  if (derived != z85_encode(key.public_key)) {
    return Status::invalid_file("cluster key '%s': the public key is not the secret key's",
                                path.c_str());
  }
  return key;
}

// Renames `from` to `to` unless `to` exists: 0 (`from` is gone), or -1 with errno (EEXIST).
int rename_no_replace(const std::string& from, const std::string& to) {
  if (renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
  if (link(from.c_str(), to.c_str()) != 0) return -1;  // a file system without RENAME_NOREPLACE
  unlink(from.c_str());
  return 0;
}

}  // namespace

std::string ClusterKey::public_z85() const { return z85_encode(public_key); }

Result<ClusterKey> load_cluster_key(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO must not block
  if (fd < 0) {
    return Status::not_found("cluster key '%s': cannot open: %s", path.c_str(), strerror(errno));
  }
  struct stat st {};
  Status bad;
  if (fstat(fd, &st) != 0) {
    bad = Status::io_error("cluster key '%s': cannot stat: %s", path.c_str(), strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    bad = Status::invalid_file("cluster key '%s': not a regular file", path.c_str());
  } else if ((st.st_mode & 077) != 0) {
    bad = Status::invalid_file(
        "cluster key '%s': mode %03o lets group or others use the secret key; run `chmod 600 %s`",
        path.c_str(), static_cast<unsigned>(st.st_mode & 0777), path.c_str());
  }
  Result<std::string> text = bad.is_ok() ? read_all(fd, path) : Result<std::string>(bad);
  close(fd);
  if (!text.is_ok()) return text.status();
  Result<ClusterKey> key = parse_key_file(*text, path);
  explicit_bzero(text->data(), text->size());
  return key;
}

Status write_cluster_key(const std::string& path) {
  if (access(path.c_str(), F_OK) == 0) {
    return Status::invalid_argument("cluster key '%s' exists: it is not replaced", path.c_str());
  }
  char public_z85[kCurveKeyZ85Chars + 1] = {}, secret_z85[kCurveKeyZ85Chars + 1] = {};
  if (zmq_curve_keypair(public_z85, secret_z85) != 0) {
    return Status::unimplemented("cannot make a cluster key: this libzmq has no CURVE (%s)",
                                 zmq_strerror(zmq_errno()));
  }
  std::string text =
      "# DwarfStar cluster key (CURVE, Z85): every process of the cluster reads it; keep it "
      "secret (mode 600)\npublic " +
      std::string(public_z85) + "\nsecret " + secret_z85 + "\n";
  explicit_bzero(secret_z85, sizeof(secret_z85));

  std::string tmp = path + ".XXXXXX";
  const int fd = mkostemp(tmp.data(), O_CLOEXEC);  // mode 0600
  if (fd < 0) {
    explicit_bzero(text.data(), text.size());
    return Status::io_error("cluster key '%s': cannot create a temporary file beside it: %s",
                            path.c_str(), strerror(errno));
  }
  Status st;
  size_t done = 0;
  while (st.is_ok() && done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) st = Status::io_error("cluster key '%s': write: %s", tmp.c_str(), strerror(errno));
    if (n > 0) done += static_cast<size_t>(n);
  }
  explicit_bzero(text.data(), text.size());
  if (st.is_ok() && (fchmod(fd, 0600) != 0 || fsync(fd) != 0)) {
    st = Status::io_error("cluster key '%s': %s", tmp.c_str(), strerror(errno));
  }
  if (close(fd) != 0 && st.is_ok()) {
    st = Status::io_error("cluster key '%s': close: %s", tmp.c_str(), strerror(errno));
  }
  if (st.is_ok() && rename_no_replace(tmp, path) != 0) {
    st = errno == EEXIST
             ? Status::invalid_argument("cluster key '%s' exists: it is not replaced", path.c_str())
             : Status::io_error("cluster key '%s': cannot put it in place: %s", path.c_str(),
                                strerror(errno));
  }
  if (!st.is_ok()) unlink(tmp.c_str());
  return st;
}

Result<std::unique_ptr<CurveAuthenticator>> CurveAuthenticator::start(zmq::context_t& context,
                                                                      const ClusterKey& key) {
  std::unique_ptr<CurveAuthenticator> a;
  try {
    a.reset(new CurveAuthenticator(context, key));
  } catch (const zmq::error_t& e) {
    return Status::unavailable("CURVE authenticator: cannot bind %s: %s", kZapEndpoint, e.what());
  }
  a->thread_ = std::thread([p = a.get()] { p->loop(); });
  return a;
}

CurveAuthenticator::CurveAuthenticator(zmq::context_t& context, const ClusterKey& key)
    : handler_(context, zmq::socket_type::rep), allowed_(key.public_key) {
  handler_.set(zmq::sockopt::linger, 0);
  handler_.bind(kZapEndpoint);
}

CurveAuthenticator::~CurveAuthenticator() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  if (handler_) {
    try {
      handler_.unbind(kZapEndpoint);  // at once: close() frees an inproc address only later
    } catch (const zmq::error_t&) {
    }
  }
}

void CurveAuthenticator::loop() {
  while (!stop_.load()) {
    std::vector<zmq::message_t> request;
    try {
      zmq::pollitem_t item{handler_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, kPoll);
      if (!zmq::recv_multipart(handler_, std::back_inserter(request), zmq::recv_flags::dontwait)) {
        continue;
      }
    } catch (const zmq::error_t& e) {
      if (e.num() != ETERM) continue;  // EINTR: a signal
      handler_.close();                // the context is being terminated: let it end
      return;
    }
    // RFC 27 request: version, request id, domain, address, routing id, mechanism, credentials.
    // A CURVE client's credentials are its 32-byte public key.
    const bool ok = request.size() == 7 && request[0].to_string() == "1.0" &&
                    request[5].to_string() == "CURVE" && request[6].size() == kCurveKeyBytes &&
                    memcmp(request[6].data(), allowed_.data(), kCurveKeyBytes) == 0;
    (ok ? accepted_ : denied_).fetch_add(1);
    std::vector<zmq::message_t> reply(6);
    reply[0] = zmq::message_t(std::string_view("1.0"));
    if (request.size() > 1) reply[1].copy(request[1]);  // the request id
    reply[2] = zmq::message_t(std::string_view(ok ? "200" : "400"));
    reply[3] = zmq::message_t(std::string_view(ok ? "OK" : "not a member of this cluster"));
    reply[4] = zmq::message_t(std::string_view(ok ? "cluster" : ""));  // user id; [5]: metadata
    try {
      zmq::send_multipart(handler_, reply);
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) {
        handler_.close();
        return;
      }
    }
  }
}

void secure_server(zmq::socket_t& socket, const ClusterKey& key) {
  socket.set(zmq::sockopt::curve_server, 1);
  socket.set(zmq::sockopt::curve_secretkey, zmq::buffer(key.secret_key));
  socket.set(zmq::sockopt::zap_domain, kZapDomain);
}

void secure_client(zmq::socket_t& socket, const ClusterKey& key) {
  socket.set(zmq::sockopt::curve_serverkey, zmq::buffer(key.public_key));
  socket.set(zmq::sockopt::curve_publickey, zmq::buffer(key.public_key));
  socket.set(zmq::sockopt::curve_secretkey, zmq::buffer(key.secret_key));
}

}  // namespace ds4::dist
