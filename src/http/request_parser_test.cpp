// Tests of the HTTP/1.1 request framing (request_parser.h): requests split anywhere parse the same,
// pipelined requests stay apart, and every malformed or oversized shape gets its status.
#include "http/request_parser.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace ds4::http {
namespace {

struct Parsed {
  std::vector<HttpRequest> requests;
  std::optional<ParseError> error;
  size_t left = 0;  // bytes neither consumed nor part of a finished request
};

// Feeds `bytes` as a connection would receive them, `step` bytes at a time.
Parsed parse(std::string_view bytes, size_t step = 0, RequestLimits limits = {}) {
  if (step == 0) step = bytes.size() + 1;
  RequestParser p(limits);
  Parsed out;
  std::string buf;
  size_t pos = 0;
  while (true) {
    const size_t used = p.feed(buf);
    buf.erase(0, used);
    if (p.state() == RequestParser::State::kError) {
      out.error = p.error();
      break;
    }
    if (p.state() == RequestParser::State::kDone) {
      out.requests.push_back(p.take());
      continue;
    }
    if (used > 0) continue;
    if (pos >= bytes.size()) break;
    buf.append(bytes.substr(pos, step));
    pos += step;
  }
  out.left = buf.size();
  return out;
}

int status_of(std::string_view bytes, RequestLimits limits = {}) {
  const Parsed p = parse(bytes, 0, limits);
  return p.error ? p.error->status : 0;
}

TEST(HttpRequestParser, ReadsARequestAndItsFields) {
  const Parsed p = parse(
      "POST /v1/messages?beta=true HTTP/1.1\r\nHost: x\r\nX-Api-Key:  secret \r\n"
      "Content-Length: 5\r\n\r\nhello");
  ASSERT_FALSE(p.error);
  ASSERT_EQ(p.requests.size(), 1u);
  const HttpRequest& r = p.requests[0];
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.path, "/v1/messages");
  EXPECT_EQ(r.query, "beta=true");
  EXPECT_EQ(r.field("x-api-key"), "secret");
  EXPECT_EQ(r.body, "hello");
  EXPECT_TRUE(r.keep_alive);
  EXPECT_EQ(r.minor, 1);
}

TEST(HttpRequestParser, KeepAliveFollowsVersionAndConnection) {
  EXPECT_FALSE(parse("GET / HTTP/1.0\r\n\r\n").requests.at(0).keep_alive);
  EXPECT_TRUE(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").requests.at(0).keep_alive);
  EXPECT_FALSE(
      parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").requests.at(0).keep_alive);
}

TEST(HttpRequestParser, PipelinedRequestsStayApartWhereverTheBytesAreCut) {
  const std::string bytes =
      "\r\nPOST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
      "POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "4;name=value\r\nwiki\r\n5\r\npedia\r\n0\r\nTrailer: x\r\n\r\n"
      "GET /c HTTP/1.1\nHost: bare-lf\n\n";
  for (size_t step = 1; step <= bytes.size(); ++step) {
    SCOPED_TRACE(step);
    const Parsed p = parse(bytes, step);
    ASSERT_FALSE(p.error) << p.error->message;
    ASSERT_EQ(p.requests.size(), 3u);
    EXPECT_EQ(p.requests[0].path, "/a");
    EXPECT_EQ(p.requests[0].body, "abc");
    EXPECT_EQ(p.requests[1].path, "/b");
    EXPECT_EQ(p.requests[1].body, "wikipedia");
    EXPECT_EQ(p.requests[2].path, "/c");
    EXPECT_EQ(p.requests[2].field("host"), "bare-lf");
    EXPECT_EQ(p.left, 0u);
  }
}

TEST(HttpRequestParser, TargetsAreDecoded) {
  EXPECT_EQ(parse("GET /v1/models/a%20b HTTP/1.1\r\nHost: x\r\n\r\n").requests.at(0).path,
            "/v1/models/a b");
  EXPECT_EQ(parse("GET http://host:8000/health?x HTTP/1.1\r\nHost: x\r\n\r\n").requests.at(0).path,
            "/health");
  EXPECT_EQ(parse("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n").requests.at(0).path, "*");
  EXPECT_EQ(status_of("GET /a%zz HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET /a%00 HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET relative HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
}

TEST(HttpRequestParser, MalformedHeadsAreBadRequests) {
  EXPECT_EQ(status_of("GET /\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET  / HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(status_of("G(T / HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / HTTQ/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / HTTP/2.0\r\n\r\n"), 505);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost : x\r\n\r\n"), 400);  // white space before ':'
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: x\r\nA: b\r\n  folded\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: x\r\nA: b\rc\r\n\r\n"), 400);
  EXPECT_EQ(status_of(std::string("GET / HTTP/1.1\r\nHost: x\r\nA: b\x01\r\n\r\n")), 400);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n"), 417);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\n\r\n"), 400);  // HTTP/1.1 needs its Host
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / HTTP/1.0\r\n\r\n"), 0);
  EXPECT_TRUE(
      parse("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n")
          .error == std::nullopt);
}

TEST(HttpRequestParser, FramingThatTwoParsersCouldReadDifferentlyIsRefused) {
  EXPECT_EQ(
      status_of(
          "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"),
      400);
  EXPECT_EQ(
      status_of("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"),
      400);
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 4\r\n\r\n"), 400);
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\n"), 400);
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n"), 400);
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"),
            501);
  EXPECT_EQ(status_of("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
  const Parsed same = parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2, 2\r\n\r\nok");
  ASSERT_FALSE(same.error);
  EXPECT_EQ(same.requests.at(0).body, "ok");
}

TEST(HttpRequestParser, ChunkedBodiesAreChecked) {
  const std::string head = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  EXPECT_EQ(status_of(head + "3\r\nabcd\r\n0\r\n\r\n"), 400);  // more data than the size says
  EXPECT_EQ(status_of(head + "x\r\n"), 400);
  EXPECT_EQ(status_of(head + "3 junk\r\nabc\r\n0\r\n\r\n"), 400);
  EXPECT_EQ(status_of(head + std::string(2000, '1') + "\r\n"), 400);
  EXPECT_EQ(status_of(head + "fffffffffffffff0\r\n"), 413);
  const RequestLimits small{.max_body = 8};
  EXPECT_EQ(status_of(head + "5\r\nabcde\r\n5\r\nfghij\r\n0\r\n\r\n", small), 413);
  EXPECT_EQ(status_of(head + "0\r\n" + std::string(70000, 'a'), {}), 431);
}

TEST(HttpRequestParser, LimitsAnswerWithTheirStatus) {
  const RequestLimits limits{
      .max_request_line = 64, .max_head_bytes = 256, .max_fields = 3, .max_body = 100};
  EXPECT_EQ(status_of("GET /" + std::string(100, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n", limits),
            414);
  // The default header bound (16 KiB): a 20 KB field is refused.
  EXPECT_EQ(
      status_of("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'b') + "\r\n\r\n"),
      431);
  // A request line still arriving is refused as soon as it is too long.
  EXPECT_EQ(status_of("GET /" + std::string(100, 'a'), limits), 414);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: x\r\nA: " + std::string(300, 'b'), limits), 431);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", limits),
            431);
  // The body limit is decided from Content-Length before any body byte arrives.
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n", limits), 413);
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n",
                      limits),
            400);
}

TEST(HttpRequestParser, AnIncompleteRequestConsumesNothingUntilItsHeadEnds) {
  RequestParser p({});
  EXPECT_EQ(p.feed("GET / HTTP/1.1\r\nHost: x\r\n"), 0u);
  EXPECT_EQ(p.state(), RequestParser::State::kHead);
  const std::string whole = "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /next";
  EXPECT_EQ(p.feed(whole), whole.size() - 9);
  EXPECT_EQ(p.state(), RequestParser::State::kDone);
}

}  // namespace
}  // namespace ds4::http
