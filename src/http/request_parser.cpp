// src/http/request_parser.cpp: the request framing of RFC 9112, strict where leniency lets two
// parsers disagree about where a request ends.
#include "http/request_parser.h"

#include <algorithm>
#include <cctype>

namespace ds4::http {
namespace {

// A chunk-size line with its extensions; longer ones are refused (400).
constexpr size_t kMaxChunkLine = 1024;
// Hex digits of a chunk size: 15 keep the value below 2^60, far past any body limit.
constexpr size_t kMaxChunkSizeDigits = 15;
// Decimal digits of a Content-Length: 18 keep the value below 10^18 < 2^63.
constexpr size_t kMaxLengthDigits = 18;

bool is_tchar(unsigned char c) {
  if (std::isalnum(c)) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return is_tchar(c); });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The percent-decoded path; false for a broken escape or a decoded NUL.
bool decode_path(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

// Calls fn on each comma-separated element of a field value, trimmed (empty ones skipped).
template <typename Fn>
void for_each_element(std::string_view value, Fn fn) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    const std::string_view item = trim(value.substr(0, comma));
    if (!item.empty()) fn(item);
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
}

// A field value's bytes: visible ASCII, obs-text, space and tab.
bool valid_value(std::string_view v) {
  return std::all_of(v.begin(), v.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c == '\t' || (c >= 0x20 && c != 0x7f);
  });
}

}  // namespace

std::string_view HttpRequest::field(std::string_view name) const {
  for (const auto& [n, v] : fields) {
    if (n == name) return v;
  }
  return {};
}

void RequestParser::fail(int status, std::string message) {
  state_ = State::kError;
  error_ = {.status = status, .message = std::move(message)};
}

HttpRequest RequestParser::take() {
  HttpRequest out = std::move(request_);
  request_ = HttpRequest{};
  state_ = State::kIdle;
  scanned_ = 0;
  chunked_ = false;
  remaining_ = 0;
  chunk_ = Chunk::kSize;
  line_.clear();
  trailer_bytes_ = 0;
  return out;
}

size_t RequestParser::feed(std::string_view in) {
  size_t used = 0;
  if (state_ == State::kIdle) {
    // Blank lines before a request line are skipped (RFC 9112 §2.2).
    while (used < in.size() && (in[used] == '\r' || in[used] == '\n')) ++used;
    if (used == in.size()) return used;
    state_ = State::kHead;
    scanned_ = 0;
  }
  if (state_ == State::kHead) {
    const std::string_view rest = in.substr(used);
    // The head ends at a line that is empty (LF LF, or LF CR LF).
    size_t end = std::string_view::npos, i = scanned_;
    while ((i = rest.find('\n', i)) != std::string_view::npos) {
      if (i + 1 < rest.size() && rest[i + 1] == '\n') {
        end = i + 2;
        break;
      }
      if (i + 2 < rest.size() && rest[i + 1] == '\r' && rest[i + 2] == '\n') {
        end = i + 3;
        break;
      }
      if (i + 2 >= rest.size()) break;  // decided by bytes still to come
      ++i;
    }
    const size_t first_lf = rest.find('\n');
    const size_t line_len = first_lf == std::string_view::npos ? rest.size() : first_lf;
    if (line_len > limits_.max_request_line) {
      fail(414, "the request line is longer than " + std::to_string(limits_.max_request_line) +
                    " bytes");
      return used;
    }
    if (end == std::string_view::npos) {
      scanned_ = i == std::string_view::npos ? rest.size() : i;
      if (rest.size() > limits_.max_head_bytes) {
        fail(431, "the request header is longer than " + std::to_string(limits_.max_head_bytes) +
                      " bytes");
      }
      return used;
    }
    if (end > limits_.max_head_bytes) {
      fail(431, "the request header is longer than " + std::to_string(limits_.max_head_bytes) +
                    " bytes");
      return used;
    }
    used += parse_head(rest.substr(0, end));
    if (state_ != State::kBody) return used;
  }
  if (state_ == State::kBody) {
    const std::string_view rest = in.substr(used);
    if (chunked_) return used + feed_chunked(rest);
    const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, rest.size()));
    request_.body.append(rest.data(), n);
    remaining_ -= n;
    if (remaining_ == 0) state_ = State::kDone;
    return used + n;
  }
  return used;
}

size_t RequestParser::parse_head(std::string_view head) {
  // Lines without their terminators; a CR anywhere but before an LF is refused.
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < head.size()) {
    const size_t lf = head.find('\n', start);
    std::string_view line = head.substr(start, lf - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find('\r') != std::string_view::npos) {
      fail(400, "a bare CR in the request header");
      return head.size();
    }
    lines.push_back(line);
    start = lf + 1;
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.empty()) {
    fail(400, "an empty request line");
    return head.size();
  }
  // request-line = method SP request-target SP HTTP-version
  const std::string_view line = lines[0];
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    fail(400, "a malformed request line");
    return head.size();
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method)) {
    fail(400, "a malformed request method");
    return head.size();
  }
  if (version.size() != 8 || !version.starts_with("HTTP/") || !std::isdigit(version[5]) ||
      version[6] != '.' || !std::isdigit(version[7])) {
    fail(400, "a malformed HTTP version");
    return head.size();
  }
  if (version[5] != '1' || (version[7] != '0' && version[7] != '1')) {
    fail(505, "HTTP version " + std::string(version.substr(5)) + " is not supported (1.0, 1.1)");
    return head.size();
  }
  request_.minor = version[7] - '0';
  const bool visible = !target.empty() && std::all_of(target.begin(), target.end(), [](char c) {
    return static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f;
  });
  if (!visible) {
    fail(400, "a malformed request target");
    return head.size();
  }
  request_.method = std::string(method);
  request_.target = std::string(target);
  std::string_view origin = target;
  if (target == "*") {
    origin = "*";
  } else if (target.front() != '/') {
    // absolute-form (http://authority/path?query): its path and query.
    const size_t scheme = target.find("://");
    if (scheme == std::string_view::npos || !is_token(target.substr(0, scheme))) {
      fail(400, "a malformed request target");
      return head.size();
    }
    const size_t slash = target.find('/', scheme + 3);
    origin = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
  }
  const size_t q = origin.find('?');
  if (!decode_path(origin.substr(0, q), &request_.path)) {
    fail(400, "a malformed escape in the request path");
    return head.size();
  }
  if (q != std::string_view::npos) request_.query = std::string(origin.substr(q + 1));

  if (lines.size() - 1 > limits_.max_fields) {
    fail(431, "more than " + std::to_string(limits_.max_fields) + " header fields");
    return head.size();
  }
  for (size_t k = 1; k < lines.size(); ++k) {
    const std::string_view f = lines[k];
    if (f.front() == ' ' || f.front() == '\t') {
      fail(400, "a folded header line");
      return head.size();
    }
    const size_t colon = f.find(':');
    if (colon == std::string_view::npos || !is_token(f.substr(0, colon))) {
      fail(400, "a malformed header field");
      return head.size();
    }
    const std::string_view value = trim(f.substr(colon + 1));
    if (!valid_value(value)) {
      fail(400, "a control character in a header field");
      return head.size();
    }
    request_.fields.emplace_back(lower(f.substr(0, colon)), std::string(value));
  }

  // Framing: Transfer-Encoding (chunked only) or one Content-Length, never both.
  bool has_te = false, has_length = false, length_bad = false;
  std::string te;
  uint64_t length = 0;
  bool close = false, keep = false;
  for (const auto& [name, value] : request_.fields) {
    if (name == "transfer-encoding") {
      has_te = true;
      for_each_element(value, [&](std::string_view item) {
        if (!te.empty()) te += ',';
        te += lower(item);
      });
    } else if (name == "content-length") {
      for_each_element(value, [&](std::string_view item) {
        const bool digits =
            item.size() <= kMaxLengthDigits && std::all_of(item.begin(), item.end(), [](char c) {
              return std::isdigit(static_cast<unsigned char>(c));
            });
        if (!digits) {
          length_bad = true;
          return;
        }
        const uint64_t v = std::stoull(std::string(item));
        if (has_length && v != length) length_bad = true;
        length = v;
        has_length = true;
      });
      if (trim(value).empty()) length_bad = true;
    } else if (name == "connection") {
      for_each_element(value, [&](std::string_view item) {
        if (iequals(item, "close")) close = true;
        if (iequals(item, "keep-alive")) keep = true;
      });
    } else if (name == "expect") {
      if (!iequals(value, "100-continue")) {
        fail(417, "the expectation '" + value + "' is not supported");
        return head.size();
      }
      request_.expect_continue = true;
    }
  }
  request_.keep_alive = !close && (request_.minor == 1 || keep);
  // RFC 9112 §3.2: an HTTP/1.1 request carries exactly one Host field (HTTP/1.0 at most one).
  const auto hosts = std::count_if(request_.fields.begin(), request_.fields.end(),
                                   [](const auto& f) { return f.first == "host"; });
  if (hosts > 1 || (hosts == 0 && request_.minor == 1)) {
    fail(400, hosts > 1 ? "more than one Host field" : "an HTTP/1.1 request without a Host field");
    return head.size();
  }
  if (has_te && has_length) {
    fail(400, "both Transfer-Encoding and Content-Length");
    return head.size();
  }
  if (has_te) {
    if (request_.minor == 0) {
      fail(400, "Transfer-Encoding in an HTTP/1.0 request");
      return head.size();
    }
    if (te != "chunked") {
      fail(501, "the transfer coding '" + te + "' is not supported (chunked only)");
      return head.size();
    }
    chunked_ = true;
    chunk_ = Chunk::kSize;
    state_ = State::kBody;
    return head.size();
  }
  if (length_bad) {
    fail(400, "a malformed Content-Length");
    return head.size();
  }
  if (length > limits_.max_body) {
    fail(413, "the request body (" + std::to_string(length) + " bytes) is larger than the limit (" +
                  std::to_string(limits_.max_body) + " bytes)");
    return head.size();
  }
  if (length == 0) {
    request_.expect_continue = false;
    state_ = State::kDone;
    return head.size();
  }
  request_.body.reserve(static_cast<size_t>(length));
  remaining_ = length;
  state_ = State::kBody;
  return head.size();
}

size_t RequestParser::feed_chunked(std::string_view in) {
  size_t used = 0;
  // Reads a line into line_; true once it is complete (its LF consumed, a final CR dropped).
  const auto read_line = [&](size_t limit) -> int {
    const size_t lf = in.find('\n', used);
    const size_t end = lf == std::string_view::npos ? in.size() : lf;
    line_.append(in.data() + used, end - used);
    used = lf == std::string_view::npos ? in.size() : lf + 1;
    if (line_.size() > limit) return -1;
    if (lf == std::string_view::npos) return 0;
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    return 1;
  };
  while (used < in.size() && state_ == State::kBody) {
    switch (chunk_) {
      case Chunk::kSize: {
        const int r = read_line(kMaxChunkLine);
        if (r < 0) return fail(400, "a chunk-size line is too long"), used;
        if (r == 0) return used;
        size_t digits = 0;
        uint64_t size = 0;
        while (digits < line_.size() && hex_value(line_[digits]) >= 0) {
          size = size * 16 + static_cast<uint64_t>(hex_value(line_[digits]));
          if (++digits > kMaxChunkSizeDigits) return fail(413, "a chunk is too large"), used;
        }
        const std::string_view ext = trim(std::string_view(line_).substr(digits));
        if (digits == 0 || (!ext.empty() && ext.front() != ';') ||
            line_.find('\r') != std::string::npos) {
          return fail(400, "a malformed chunk size"), used;
        }
        line_.clear();
        if (size == 0) {
          chunk_ = Chunk::kTrailer;
        } else if (size > limits_.max_body - request_.body.size()) {
          return fail(413, "the request body is larger than the limit (" +
                               std::to_string(limits_.max_body) + " bytes)"),
                 used;
        } else {
          remaining_ = size;
          chunk_ = Chunk::kData;
        }
        break;
      }
      case Chunk::kData: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, in.size() - used));
        request_.body.append(in.data() + used, n);
        used += n;
        remaining_ -= n;
        if (remaining_ == 0) chunk_ = Chunk::kDataEnd;
        break;
      }
      case Chunk::kDataEnd: {
        const int r = read_line(2);
        if (r < 0 || (r == 1 && !line_.empty())) {
          return fail(400, "chunk data longer than its size"), used;
        }
        if (r == 0) return used;
        line_.clear();
        chunk_ = Chunk::kSize;
        break;
      }
      case Chunk::kTrailer: {
        const size_t before = used;
        const int r = read_line(limits_.max_head_bytes);
        trailer_bytes_ += used - before;
        if (r < 0 || trailer_bytes_ > limits_.max_head_bytes) {
          return fail(431, "the trailer fields are too long"), used;
        }
        if (r == 0) return used;
        const bool last = line_.empty();
        line_.clear();
        if (last) state_ = State::kDone;  // trailer fields are read and dropped
        break;
      }
    }
  }
  return used;
}

}  // namespace ds4::http
