// Tests of the HTTP/1.1 listener (listener.h) on loopback with raw sockets: slow clients hold no
// worker, deadlines answer 408, pipelined requests are answered in order, the per-client limit
// answers 503, Expect: 100-continue, streaming framing, and stopping with a stream open.
#include "http/listener.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace ds4::http {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long a test waits for an answer that must come; far above any expected latency, so a
// loaded machine does not fail the test, and far below the deadlines a blocked server would
// need (the slow clients of the slow-client test last longer than this).
constexpr milliseconds kAnswerWithin(5000);

struct Response {
  int status = 0;  // 0: none (the connection closed or the wait ran out)
  std::string head, body;
};

class Client {
 public:
  explicit Client(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    timeval tv{.tv_sec = 0, .tv_usec = 200 * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Client() { ::close(fd_); }
  bool connected() const { return connected_; }
  void send(std::string_view s) { ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL); }

  // Reads more bytes into the buffer; false on EOF, error, or nothing until `until`.
  bool fill(Clock::time_point until) {
    char buf[4096];
    while (Clock::now() < until) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n > 0) {
        in_.append(buf, static_cast<size_t>(n));
        return true;
      }
      if (n == 0) return false;
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    }
    return false;
  }

  // One response: its head, then a Content-Length, chunked or connection-delimited body.
  Response read(milliseconds within = kAnswerWithin) {
    const auto until = Clock::now() + within;
    Response r;
    size_t end;
    while ((end = in_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill(until)) return r;
    }
    r.head = in_.substr(0, end + 4);
    in_.erase(0, end + 4);
    r.status = std::stoi(r.head.substr(9, 3));
    if (r.status == 100) return r;
    const size_t cl = r.head.find("Content-Length: ");
    if (cl != std::string::npos) {
      const size_t n = std::stoul(r.head.substr(cl + 16));
      while (in_.size() < n) {
        if (!fill(until)) return r;
      }
      r.body = in_.substr(0, n);
      in_.erase(0, n);
    } else if (r.head.find("Transfer-Encoding: chunked") != std::string::npos) {
      while (true) {
        size_t lf;
        while ((lf = in_.find("\r\n")) == std::string::npos) {
          if (!fill(until)) return r;
        }
        const size_t n = std::stoul(in_.substr(0, lf), nullptr, 16);
        while (in_.size() < lf + 2 + n + 2) {
          if (!fill(until)) return r;
        }
        r.body += in_.substr(lf + 2, n);
        in_.erase(0, lf + 2 + n + 2);
        if (n == 0) break;
      }
    } else {
      while (fill(until)) {
      }
      r.body = std::move(in_);
      in_.clear();
    }
    return r;
  }

  // True when the server closes the connection within `within`.
  bool closed(milliseconds within) {
    const auto until = Clock::now() + within;
    char c;
    while (Clock::now() < until) {
      const ssize_t n = ::recv(fd_, &c, 1, 0);
      if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
    }
    return false;
  }

 private:
  int fd_;
  bool connected_ = false;
  std::string in_;
};

// A listener on a free loopback port, run on its own thread, with a handler for the tests:
// /echo answers the method, path and body; /stream streams until told to stop or three parts;
// /throw throws.
class Served {
 public:
  explicit Served(ListenerOptions options) {
    options.host = "127.0.0.1";
    options.port = 0;
    auto l = Listener::bind(
        options,
        [](Exchange& ex) {
          const HttpRequest& r = ex.request();
          if (r.path == "/throw") throw std::runtime_error("handler failure");
          if (r.path == "/stream") {
            ex.begin_stream(200, "text/event-stream");
            for (int i = 0; i < 3 || r.query == "forever"; ++i) {
              if (ex.stopping() || !ex.stream("part " + std::to_string(i) + "\n")) return;
              std::this_thread::sleep_for(milliseconds(20));
            }
            ex.end_stream();
            return;
          }
          if (r.path == "/size")
            return void(ex.respond(200, "text/plain", std::to_string(r.body.size())));
          ex.respond(200, "text/plain", r.method + " " + r.path + " " + r.body);
        },
        [](int status, const std::string& message) {
          return "{\"status\":" + std::to_string(status) + ",\"message\":\"" + message + "\"}";
        });
    if (!l.is_ok()) throw std::runtime_error(l.status().to_string());
    listener_ = std::move(*l);
    thread_ = std::thread([this] { listener_->run(); });
  }
  ~Served() {
    listener_->stop();
    thread_.join();
  }
  int port() const { return listener_->port(); }

 private:
  std::unique_ptr<Listener> listener_;
  std::thread thread_;
};

TEST(HttpListener, PipelinedRequestsAreAnsweredInOrder) {
  Served s({});
  Client c(s.port());
  c.send(
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\none"
      "GET /second HTTP/1.1\r\nHost: x\r\n\r\n"
      "POST /third HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n");
  EXPECT_EQ(c.read().body, "POST /echo one");
  EXPECT_EQ(c.read().body, "GET /second ");
  EXPECT_EQ(c.read().body, "POST /third hi");
}

TEST(HttpListener, LargeBodiesAreReadWhole) {
  // Bodies around the multiples of what one readiness event reads (1 MiB): the bytes of the last
  // read of an event must be parsed even when the socket has nothing more to report.
  Served s({});
  for (const size_t mib : {1, 2, 3}) {
    for (const long delta : {-70000L, -1L, 0L, 1L, 70000L}) {
      const size_t n = (mib << 20) + delta;
      Client c(s.port());
      c.send("POST /size HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(n) + "\r\n\r\n" +
             std::string(n, 'x'));
      EXPECT_EQ(c.read().body, std::to_string(n));
    }
  }
}

TEST(HttpListener, SlowClientsHoldNoWorkerAndMeetTheHeaderDeadline) {
  // Two workers and 100 clients sending their header a byte at a time: on a server whose threads
  // read headers, two of them would block every other request until their deadline.
  Served s({.workers = 2, .header_timeout_ms = 3000});
  std::vector<std::unique_ptr<Client>> slow;
  for (int i = 0; i < 100; ++i) {
    slow.push_back(std::make_unique<Client>(s.port()));
    ASSERT_TRUE(slow.back()->connected());
    slow.back()->send("G");
  }
  for (int round = 0; round < 3; ++round) {
    for (auto& c : slow) c->send("E");
    Client normal(s.port());
    const auto t0 = Clock::now();
    normal.send("GET /echo HTTP/1.1\r\nHost: x\r\n\r\n");
    const Response r = normal.read(kAnswerWithin);
    EXPECT_EQ(r.status, 200);
    EXPECT_LT(Clock::now() - t0, kAnswerWithin);
  }
  // Each slow client gets a 408 once its header deadline passes, then the connection closes.
  const Response late = slow[0]->read(milliseconds(3000) + kAnswerWithin);
  EXPECT_EQ(late.status, 408);
  EXPECT_NE(late.body.find("header did not arrive within 3 s"), std::string::npos) << late.body;
}

TEST(HttpListener, ABodyThatStopsArrivingMeetsTheBodyDeadline) {
  Served s({.body_timeout_ms = 300});
  Client c(s.port());
  c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc");
  const Response r = c.read();
  EXPECT_EQ(r.status, 408);
  EXPECT_NE(r.body.find("body stalled for 0.3 s"), std::string::npos) << r.body;
  EXPECT_TRUE(c.closed(kAnswerWithin));
}

TEST(HttpListener, ABodyThatKeepsArrivingIsNotCut) {
  // The body deadline is for a stall: a byte every 150 ms keeps a 1 s deadline from firing over
  // a body that takes 1.5 s in all (a loaded machine has 850 ms of slack per byte).
  Served s({.body_timeout_ms = 1000});
  Client c(s.port());
  c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n");
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(milliseconds(150));
    c.send("b");
  }
  EXPECT_EQ(c.read().body, "POST /echo bbbbbbbbbb");
}

TEST(HttpListener, AnIdleKeepAliveConnectionIsClosed) {
  Served s({.idle_timeout_ms = 300});
  Client c(s.port());
  c.send("GET /echo HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(c.read().status, 200);
  EXPECT_TRUE(c.closed(kAnswerWithin));
}

TEST(HttpListener, TheConnectionsOfOneClientAreBounded) {
  Served s({.max_per_client = 3});
  std::vector<std::unique_ptr<Client>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<Client>(s.port()));
    held.back()->send("GET /echo HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(held.back()->read().status, 200);
  }
  Client extra(s.port());
  const Response r = extra.read();
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.body.find("too many open connections from 127.0.0.1"), std::string::npos);
  EXPECT_NE(r.head.find("Retry-After: 1"), std::string::npos);
  held.pop_back();
  // The count drops when a connection closes (the event thread sees the close first).
  Response again;
  for (int attempt = 0; attempt < 50 && again.status != 200; ++attempt) {
    Client next(s.port());
    next.send("GET /echo HTTP/1.1\r\nHost: x\r\n\r\n");
    again = next.read();
    if (again.status != 200) std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_EQ(again.status, 200);
}

TEST(HttpListener, ExpectContinueIsAnsweredBeforeTheBody) {
  Served s({});
  Client c(s.port());
  c.send("POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n");
  EXPECT_EQ(c.read().status, 100);
  c.send("body");
  EXPECT_EQ(c.read().body, "POST /echo body");
}

TEST(HttpListener, AnOversizedBodyIsRefusedBeforeItIsSent) {
  Served s({.limits = {.max_body = 100}});
  Client c(s.port());
  c.send("POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 1000\r\n\r\n");
  const Response r = c.read();
  EXPECT_EQ(r.status, 413);
  EXPECT_NE(r.head.find("Connection: close"), std::string::npos);
}

TEST(HttpListener, MalformedRequestsGetTheirStatusAndTheConnectionCloses) {
  Served s({});
  Client c(s.port());
  c.send("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n");
  const Response r = c.read();
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("both Transfer-Encoding and Content-Length"), std::string::npos);
  EXPECT_TRUE(c.closed(kAnswerWithin));
}

TEST(HttpListener, StreamsAreChunkedForHttp11AndConnectionDelimitedForHttp10) {
  Served s({});
  Client c11(s.port());
  c11.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n");
  const Response r11 = c11.read();
  EXPECT_NE(r11.head.find("Transfer-Encoding: chunked"), std::string::npos);
  EXPECT_EQ(r11.body, "part 0\npart 1\npart 2\n");
  c11.send("GET /echo HTTP/1.1\r\nHost: x\r\n\r\n");  // the connection carries the next request
  EXPECT_EQ(c11.read().status, 200);
  Client c10(s.port());
  c10.send("GET /stream HTTP/1.0\r\n\r\n");
  const Response r10 = c10.read();
  EXPECT_EQ(r10.head.find("chunked"), std::string::npos);
  EXPECT_NE(r10.head.find("Connection: close"), std::string::npos);
  EXPECT_EQ(r10.body, "part 0\npart 1\npart 2\n");
}

TEST(HttpListener, AHandlerThatThrowsAnswers500) {
  Served s({});
  Client c(s.port());
  c.send("GET /throw HTTP/1.1\r\nHost: x\r\n\r\n");
  const Response r = c.read();
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("internal error"), std::string::npos);
}

TEST(HttpListener, StopEndsOpenStreamsAndReturns) {
  auto s = std::make_unique<Served>(ListenerOptions{});
  Client c(s->port());
  c.send("GET /stream?forever HTTP/1.1\r\nHost: x\r\n\r\n");
  Client idle(s->port());
  idle.send("GET /ec");  // a request half sent
  std::this_thread::sleep_for(milliseconds(100));
  const auto t0 = Clock::now();
  s.reset();  // stop() and join run()
  EXPECT_LT(Clock::now() - t0, kAnswerWithin);
  EXPECT_TRUE(idle.closed(kAnswerWithin));
}

}  // namespace
}  // namespace ds4::http
