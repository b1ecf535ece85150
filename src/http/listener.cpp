// src/http/listener.cpp: one epoll thread reads requests; workers answer them.
//
// A connection belongs to one thread at a time: the event thread while its request is read
// (the socket in epoll, the connection in `conns`), a worker from the end of the request to the
// end of the response (out of epoll, the connection in the worker's task), then the event thread
// again (`returned`), which reads the next request or closes it. The connection counts (in all
// and per client address) are the event thread's alone.
#include "http/listener.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/log.h"

namespace ds4::http {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How often deadlines are checked: a deadline fires at most this late.
constexpr milliseconds kTick(100);
// After an error answer the rest of the request is read and dropped this long before the socket
// closes: closing with unread bytes would reset the connection, and the client could lose the
// answer it has not read yet.
constexpr milliseconds kLinger(2000);
// Accepting pauses this long when the process runs out of descriptors (instead of spinning).
constexpr milliseconds kAcceptPause(100);
constexpr size_t kReadChunk = 65536;
// Reads per readiness event: a client uploading fast yields to the others after 1 MiB.
constexpr int kReadsPerEvent = 16;

struct Conn {
  Conn(int f, std::string a, int p, const RequestLimits& limits)
      : fd(f), addr(std::move(a)), port(p), parser(limits) {}
  int fd;
  std::string addr;  // the client's numeric address: the per-client count's key
  int port;
  std::string in;  // bytes read and not yet parsed (a pipelined next request)
  RequestParser parser;
  Clock::time_point deadline;
  bool lingering = false;  // answered with an error; draining before the close
  bool keep = false;       // set by the worker: the connection can carry another request
};

struct Task {
  std::unique_ptr<Conn> conn;
  HttpRequest request;
};

std::string numeric_address(const sockaddr_storage& ss, int* port) {
  char buf[INET6_ADDRSTRLEN] = "";
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
    *port = ntohs(a->sin_port);
    return buf;
  }
  const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
  ::inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
  *port = ntohs(a->sin6_port);
  std::string s = buf;
  // An IPv4 client of a dual-stack socket counts as its IPv4 address.
  if (s.starts_with("::ffff:") && s.find('.') != std::string::npos) s.erase(0, 7);
  return s;
}

// A write that never waits: what does not fit in the socket buffer now is dropped.
void send_now(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// So that the connection limit, not the process's descriptor limit, is what clients meet.
void raise_descriptor_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
}

}  // namespace

struct Listener::Impl {
  ListenerOptions options;
  Handler handler;
  ErrorBody error_body;
  int listen_fd = -1, epoll_fd = -1, wake_fd = -1;
  int port = 0;
  std::atomic<bool> stopping{false};

  // The event thread's.
  std::unordered_map<int, std::unique_ptr<Conn>> conns;  // being read, or lingering
  std::unordered_map<std::string, int> per_client;
  int open = 0;  // connections open, those lent to workers included
  int busy = 0;  // connections lent to workers
  bool accepting = true;
  bool shutting_down = false;
  Clock::time_point accept_resume;

  // Shared by the event thread and the workers.
  std::mutex mu;
  std::condition_variable work_ready;
  std::deque<Task> work;
  std::vector<std::unique_ptr<Conn>> returned;
  bool workers_exit = false;
  std::vector<std::thread> workers;

  ~Impl() {
    for (auto& [fd, c] : conns) ::close(fd);
    for (int fd : {listen_fd, epoll_fd, wake_fd}) {
      if (fd >= 0) ::close(fd);
    }
  }

  void wake() {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fd, &one, sizeof one);
  }

  void watch(int fd) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }
  void unwatch(int fd) { ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr); }

  // Closes a connection that is out of `conns` (returned by a worker, or never added).
  void release(Conn& c) {
    ::close(c.fd);
    --open;
    if (--per_client[c.addr] <= 0) per_client.erase(c.addr);
  }
  void close_conn(int fd) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    unwatch(fd);
    release(*it->second);
    conns.erase(it);
  }

  // The whole answer to something the transport refuses: its JSON body from error_body, the
  // connection closing after it (a 503 says when to retry).
  std::string refusal(int status, const std::string& message) const {
    const std::string body = error_body(status, message);
    Headers extra;
    if (status == 503) extra.emplace_back("Retry-After", "1");
    return response_head(status, "application/json", static_cast<long long>(body.size()), false,
                         true, options.default_headers, extra) +
           body;
  }

  // Answers a request the transport refuses, then drains and closes the connection.
  void answer_error(Conn& c, int status, const std::string& message) {
    send_now(c.fd, refusal(status, message));
    ::shutdown(c.fd, SHUT_WR);
    c.lingering = true;
    c.in.clear();
    c.deadline = Clock::now() + kLinger;
  }

  void accept_all() {
    while (true) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          DS4_LOG_WARN("cannot accept a connection (%s): accepting pauses for %d ms",
                       std::strerror(errno), static_cast<int>(kAcceptPause.count()));
          unwatch(listen_fd);
          accepting = false;
          accept_resume = Clock::now() + kAcceptPause;
        }
        return;
      }
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      int peer_port = 0;
      std::string addr = numeric_address(ss, &peer_port);
      const auto held = per_client.find(addr);
      const int from_client = held == per_client.end() ? 0 : held->second;
      if (open >= options.max_connections || from_client >= options.max_per_client) {
        // Refused at once and closed without lingering, so refusals never hold a place.
        send_now(fd, refusal(503, open >= options.max_connections
                                      ? "the server has too many open connections"
                                      : "too many open connections from " + addr + " (at most " +
                                            std::to_string(options.max_per_client) + ")"));
        ::close(fd);
        continue;
      }
      auto c = std::make_unique<Conn>(fd, addr, peer_port, options.limits);
      ++open;
      ++per_client[addr];
      // A new connection must send its request header within the header deadline.
      c->deadline = Clock::now() + milliseconds(options.header_timeout_ms);
      watch(fd);
      conns.emplace(fd, std::move(c));
    }
  }

  // Parses what the connection has read. False when the connection left the event thread (a
  // request went to a worker) or is answered with an error.
  bool process(Conn& c) {
    while (!c.lingering) {
      const RequestParser::State before = c.parser.state();
      const size_t used = c.parser.feed(c.in);
      c.in.erase(0, used);
      const RequestParser::State state = c.parser.state();
      if (state == RequestParser::State::kError) {
        answer_error(c, c.parser.error().status, c.parser.error().message);
        return false;
      }
      if (state == RequestParser::State::kDone) {
        dispatch(c.fd);
        return false;
      }
      if (before == RequestParser::State::kIdle && state != RequestParser::State::kIdle) {
        c.deadline = Clock::now() + milliseconds(options.header_timeout_ms);
      }
      // The body deadline is for a stall: it starts at the end of the header and again with
      // every byte of the body.
      if (state == RequestParser::State::kBody && (before != state || used > 0)) {
        c.deadline = Clock::now() + milliseconds(options.body_timeout_ms);
      }
      if (before != RequestParser::State::kBody && state == RequestParser::State::kBody) {
        if (c.parser.request().expect_continue && c.in.empty()) {
          send_now(c.fd, "HTTP/1.1 100 Continue\r\n\r\n");
        }
      }
      if (used == 0) return true;
    }
    return false;
  }

  // Reads what the socket has for the connection (level-triggered: what is left is reported
  // again) and parses it.
  void on_readable(Conn& c) {
    char buf[kReadChunk];
    for (int reads = 0; reads < kReadsPerEvent; ++reads) {
      const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) {
        if (c.lingering) continue;
        c.in.append(buf, static_cast<size_t>(n));
        // Parsed at once: bytes left unparsed when the socket is drained would wait for an
        // event that never comes.
        if (!process(c)) return;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      // The client closed (a request it had not finished is dropped) or the connection failed.
      return close_conn(c.fd);
    }
  }

  void dispatch(int fd) {
    auto it = conns.find(fd);
    std::unique_ptr<Conn> c = std::move(it->second);
    conns.erase(it);
    unwatch(fd);
    HttpRequest request = c->parser.take();
    ++busy;
    {
      const std::lock_guard<std::mutex> lock(mu);
      work.push_back(Task{std::move(c), std::move(request)});
    }
    work_ready.notify_one();
  }

  void take_returned() {
    std::vector<std::unique_ptr<Conn>> back;
    {
      const std::lock_guard<std::mutex> lock(mu);
      back.swap(returned);
    }
    for (auto& c : back) {
      --busy;
      if (!c->keep || shutting_down) {
        release(*c);
        continue;
      }
      // A pipelined request already read starts its header deadline now.
      c->deadline = Clock::now() + milliseconds(c->in.empty() ? options.idle_timeout_ms
                                                              : options.header_timeout_ms);
      const int fd = c->fd;
      Conn& ref = *c;
      watch(fd);
      conns.emplace(fd, std::move(c));
      if (!ref.in.empty()) process(ref);
    }
  }

  void sweep() {
    const auto now = Clock::now();
    if (!accepting && !shutting_down && now >= accept_resume) {
      watch(listen_fd);
      accepting = true;
    }
    std::vector<int> expired;
    for (const auto& [fd, c] : conns) {
      if (now >= c->deadline) expired.push_back(fd);
    }
    for (const int fd : expired) {
      Conn& c = *conns.at(fd);
      if (c.lingering || (c.parser.state() == RequestParser::State::kIdle && c.in.empty())) {
        close_conn(fd);  // drained, or idle: nothing to answer
      } else {
        const bool body = c.parser.state() == RequestParser::State::kBody;
        const int limit_ms = body ? options.body_timeout_ms : options.header_timeout_ms;
        char message[96];
        std::snprintf(message, sizeof message,
                      body ? "the request body stalled for %g s"
                           : "the request header did not arrive within %g s",
                      limit_ms / 1000.0);
        answer_error(c, 408, message);
      }
    }
  }

  void begin_shutdown() {
    shutting_down = true;
    if (accepting) unwatch(listen_fd);
    ::close(listen_fd);
    listen_fd = -1;
    std::vector<int> fds;
    for (const auto& [fd, c] : conns) fds.push_back(fd);
    for (const int fd : fds) close_conn(fd);
  }

  void serve(Task& t) {
    Exchange::Io io{.fd = t.conn->fd,
                    .write_timeout_ms = options.write_timeout_ms,
                    .default_headers = &options.default_headers,
                    .stopping = &stopping,
                    .remote_addr = t.conn->addr,
                    .remote_port = t.conn->port};
    Exchange ex(t.request, std::move(io));
    try {
      handler(ex);
    } catch (const std::exception& e) {
      DS4_LOG_ERROR("%s %s: %s", t.request.method.c_str(), t.request.path.c_str(), e.what());
    } catch (...) {
      DS4_LOG_ERROR("%s %s: an unknown exception", t.request.method.c_str(),
                    t.request.path.c_str());
    }
    if (!ex.responded()) ex.respond(500, "application/json", error_body(500, "internal error"));
    t.conn->keep = ex.reusable() && t.request.keep_alive && !stopping.load();
  }

  void worker_loop() {
    while (true) {
      Task t;
      {
        std::unique_lock<std::mutex> lock(mu);
        work_ready.wait(lock, [&] { return workers_exit || !work.empty(); });
        if (work.empty()) return;
        t = std::move(work.front());
        work.pop_front();
      }
      serve(t);
      {
        const std::lock_guard<std::mutex> lock(mu);
        returned.push_back(std::move(t.conn));
      }
      wake();
    }
  }

  void run() {
    for (int i = 0; i < options.workers; ++i) workers.emplace_back([this] { worker_loop(); });
    epoll_event events[64];
    auto last_sweep = Clock::now();
    while (true) {
      if (stopping.load() && !shutting_down) begin_shutdown();
      if (shutting_down && busy == 0) break;
      const int n = ::epoll_wait(epoll_fd, events, 64, static_cast<int>(kTick.count()));
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == listen_fd) {
          if (!shutting_down) accept_all();
        } else if (fd == wake_fd) {
          uint64_t count;
          [[maybe_unused]] const ssize_t r = ::read(wake_fd, &count, sizeof count);
          take_returned();
        } else if (auto it = conns.find(fd); it != conns.end()) {
          on_readable(*it->second);
        }
      }
      if (Clock::now() - last_sweep >= kTick) {
        sweep();
        last_sweep = Clock::now();
      }
    }
    {
      const std::lock_guard<std::mutex> lock(mu);
      workers_exit = true;
    }
    work_ready.notify_all();
    for (auto& w : workers) w.join();
    workers.clear();
    take_returned();
  }
};

Result<std::unique_ptr<Listener>> Listener::bind(const ListenerOptions& options, Handler handler,
                                                 ErrorBody error_body) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->handler = std::move(handler);
  impl->error_body = std::move(error_body);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(options.port);
  if (::getaddrinfo(options.host.c_str(), port.c_str(), &hints, &found) != 0 || !found) {
    return Status::invalid_argument("'%s' is not a numeric IPv4 or IPv6 address",
                                    options.host.c_str());
  }
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    ::freeaddrinfo(found);
    return Status::io_error("cannot create a socket: %s", std::strerror(errno));
  }
  impl->listen_fd = fd;
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const int bound = ::bind(fd, found->ai_addr, found->ai_addrlen);
  ::freeaddrinfo(found);
  if (bound != 0 || ::listen(fd, SOMAXCONN) != 0) {
    return Status::unavailable("cannot bind %s:%d (in use, or not a local address): %s",
                               options.host.c_str(), options.port, std::strerror(errno));
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  numeric_address(ss, &impl->port);
  impl->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  impl->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl->epoll_fd < 0 || impl->wake_fd < 0) {
    return Status::io_error("cannot create the event loop: %s", std::strerror(errno));
  }
  impl->watch(impl->listen_fd);
  impl->watch(impl->wake_fd);
  raise_descriptor_limit();
  return std::unique_ptr<Listener>(new Listener(std::move(impl)));
}

Listener::Listener(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Listener::~Listener() = default;
int Listener::port() const { return impl_->port; }
void Listener::run() { impl_->run(); }
void Listener::stop() {
  impl_->stopping = true;
  impl_->wake();
}

}  // namespace ds4::http
