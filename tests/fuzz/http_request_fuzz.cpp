// libFuzzer target for ds4-server's HTTP/1.1 request framing (src/http/request_parser.cpp), with
// the hostile-request corpus of tests/fuzz/http_request_seeds (smuggling shapes, chunked bodies,
// folded and malformed fields, pipelined requests). The first input byte picks how the rest is
// cut into reads and which limits apply; the rest is the bytes of a connection. Checked for every
// input (ASan/UBSan instrumented):
//   - the requests and the final error are the same whether the bytes arrive at once or cut into
//     reads: where a request ends never depends on how the bytes were received;
//   - nothing is consumed beyond the input, and no body exceeds the body limit;
//   - an error's status is one the transport answers (400, 413, 414, 417, 431, 501, 505) with a
//     message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "http/request_parser.h"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

struct Outcome {
  std::vector<ds4::http::HttpRequest> requests;
  int error = 0;
};

Outcome run(std::string_view bytes, size_t step, const ds4::http::RequestLimits& limits) {
  using State = ds4::http::RequestParser::State;
  ds4::http::RequestParser p(limits);
  Outcome out;
  std::string buf;
  size_t pos = 0;
  while (true) {
    const size_t used = p.feed(buf);
    require(used <= buf.size());
    buf.erase(0, used);
    if (p.state() == State::kError) {
      const int s = p.error().status;
      require((s == 400 || s == 413 || s == 414 || s == 417 || s == 431 || s == 501 || s == 505) &&
              !p.error().message.empty());
      out.error = s;
      return out;
    }
    if (p.state() == State::kDone) {
      out.requests.push_back(p.take());
      require(out.requests.back().body.size() <= limits.max_body);
      continue;
    }
    if (used > 0) continue;
    if (pos >= bytes.size()) return out;
    buf.append(bytes.substr(pos, step));
    pos += step;
  }
}

bool same(const ds4::http::HttpRequest& a, const ds4::http::HttpRequest& b) {
  return a.method == b.method && a.target == b.target && a.path == b.path && a.query == b.query &&
         a.minor == b.minor && a.fields == b.fields && a.body == b.body &&
         a.keep_alive == b.keep_alive && a.expect_continue == b.expect_continue;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  ds4::http::RequestLimits limits;
  if (mode & 0x80)
    limits = {.max_request_line = 64, .max_head_bytes = 256, .max_fields = 4, .max_body = 32};
  const size_t step = (mode & 0x0f) + 1;
  const Outcome whole = run(bytes, bytes.size() + 1, limits);
  const Outcome cut = run(bytes, step, limits);
  require(whole.error == cut.error);
  require(whole.requests.size() == cut.requests.size());
  for (size_t i = 0; i < whole.requests.size(); ++i) {
    require(same(whole.requests[i], cut.requests[i]));
  }
  return 0;
}
