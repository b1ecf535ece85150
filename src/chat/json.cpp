// src/chat/json.cpp: JSON reader/writer with Python json semantics (see json.h for the why).
#include "chat/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <system_error>
#include <unordered_map>

#include "base/utf8.h"

namespace ds4::chat::json {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Reader {
 public:
  Reader(std::string_view text, int max_depth) : s_(text), max_depth_(max_depth) {}

  Result<Value> document() {
    Value v;
    skip_ws();
    DS4_TRY(value(&v, 0));
    skip_ws();
    if (pos_ != s_.size()) return error("extra data");
    return v;
  }

 private:
  Status error(const char* what) const {
    return Status::invalid_argument("JSON: %s at offset %zu", what, pos_);
  }
  void skip_ws() {
    while (pos_ < s_.size() && is_ws(s_[pos_])) ++pos_;
  }
  bool consume(std::string_view lit) {
    if (s_.substr(pos_, lit.size()) != lit) return false;
    pos_ += lit.size();
    return true;
  }

  Status value(Value* v, int depth) {
    if (depth > max_depth_) return error("nesting too deep");
    if (pos_ >= s_.size()) return error("expected a value");
    const char c = s_[pos_];
    if (c == '{') return object(v, depth);
    if (c == '[') return array(v, depth);
    if (c == '"') {
      v->type = Type::kString;
      return string(&v->text);
    }
    if (consume("null")) return Status::ok();
    if (consume("true")) {
      v->type = Type::kBool;
      v->boolean = true;
      return Status::ok();
    }
    if (consume("false")) {
      v->type = Type::kBool;
      return Status::ok();
    }
    for (std::string_view special : {"NaN", "Infinity", "-Infinity"}) {
      if (consume(special)) {
        v->type = Type::kNumber;
        v->text = std::string(special);
        return Status::ok();
      }
    }
    return number(v);
  }

  // Python's NUMBER_RE: -?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?
  Status number(Value* v) {
    const size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    if (pos_ >= s_.size() || !is_digit(s_[pos_])) return error("expected a value");
    if (s_[pos_] == '0') {
      ++pos_;
    } else {
      while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
    }
    bool integer = true;
    if (pos_ + 1 < s_.size() && s_[pos_] == '.' && is_digit(s_[pos_ + 1])) {
      integer = false;
      ++pos_;
      while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      size_t p = pos_ + 1;
      if (p < s_.size() && (s_[p] == '+' || s_[p] == '-')) ++p;
      if (p < s_.size() && is_digit(s_[p])) {
        integer = false;
        while (p < s_.size() && is_digit(s_[p])) ++p;
        pos_ = p;
      }
    }
    v->type = Type::kNumber;
    v->is_integer = integer;
    v->text = std::string(s_.substr(start, pos_ - start));
    return Status::ok();
  }

  Status string(std::string* out) {
    ++pos_;  // opening quote
    while (true) {
      if (pos_ >= s_.size()) return error("unterminated string");
      const char c = s_[pos_];
      if (c == '"') {
        ++pos_;
        return Status::ok();
      }
      if (static_cast<unsigned char>(c) < 0x20) return error("control character in string");
      if (c != '\\') {
        out->push_back(c);
        ++pos_;
        continue;
      }
      if (pos_ + 1 >= s_.size()) return error("unterminated string");
      const char e = s_[pos_ + 1];
      pos_ += 2;
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          uint32_t cp = 0;
          if (!hex4(&cp)) return error("invalid \\u escape");
          if (cp >= 0xd800 && cp <= 0xdbff && s_.substr(pos_, 2) == "\\u") {
            const size_t save = pos_;
            pos_ += 2;
            uint32_t low = 0;
            if (hex4(&low) && low >= 0xdc00 && low <= 0xdfff) {
              cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
            } else {
              pos_ = save;  // a lone high surrogate; the next escape is read on its own
            }
          }
          base::append_utf8(cp, out);  // lone surrogates keep their 3-byte (WTF-8) form
          break;
        }
        default: return error("invalid escape");
      }
    }
  }

  bool hex4(uint32_t* cp) {
    if (pos_ + 4 > s_.size()) return false;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const int h = hex_value(s_[pos_ + i]);
      if (h < 0) return false;
      v = v * 16 + static_cast<uint32_t>(h);
    }
    pos_ += 4;
    *cp = v;
    return true;
  }

  Status array(Value* v, int depth) {
    v->type = Type::kArray;
    ++pos_;
    skip_ws();
    if (consume("]")) return Status::ok();
    while (true) {
      skip_ws();
      v->items.emplace_back();
      DS4_TRY(value(&v->items.back(), depth + 1));
      skip_ws();
      if (consume("]")) return Status::ok();
      if (!consume(",")) return error("expected ',' or ']'");
    }
  }

  Status object(Value* v, int depth) {
    v->type = Type::kObject;
    ++pos_;
    skip_ws();
    if (consume("}")) return Status::ok();
    std::unordered_map<std::string, size_t> index;
    while (true) {
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != '"') return error("expected a key");
      std::string key;
      DS4_TRY(string(&key));
      skip_ws();
      if (!consume(":")) return error("expected ':'");
      skip_ws();
      Value member;
      DS4_TRY(value(&member, depth + 1));
      // Python dict semantics: a repeated key keeps its first position and takes the last value.
      auto [it, inserted] = index.try_emplace(key, v->members.size());
      if (inserted) {
        v->members.push_back(Member{std::move(key), std::move(member)});
      } else {
        v->members[it->second].value = std::move(member);
      }
      skip_ws();
      if (consume("}")) return Status::ok();
      if (!consume(",")) return error("expected ',' or '}'");
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  int max_depth_;
};

// Python float.__repr__: shortest round-trip digits; exponent form when decpt <= -4 or > 16.
void append_float_repr(double d, std::string* out) {
  if (std::isnan(d)) {
    *out += "NaN";
    return;
  }
  if (std::isinf(d)) {
    *out += d < 0 ? "-Infinity" : "Infinity";
    return;
  }
  if (d == 0) {
    *out += std::signbit(d) ? "-0.0" : "0.0";
    return;
  }
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));  // e.g. "-1.2345e+16"
  std::string digits;
  size_t i = 0;
  if (sci[0] == '-') {
    out->push_back('-');
    i = 1;
  }
  for (; i < sci.size() && sci[i] != 'e'; ++i) {
    if (sci[i] != '.') digits.push_back(sci[i]);
  }
  int exp10 = 0;
  std::from_chars(sci.data() + i + 1 + (sci[i + 1] == '+' ? 1 : 0), sci.data() + sci.size(), exp10);
  const int decpt = exp10 + 1;  // value = 0.DIGITS * 10^decpt
  const int n = static_cast<int>(digits.size());
  if (decpt <= -4 || decpt > 16) {
    out->push_back(digits[0]);
    if (n > 1) {
      out->push_back('.');
      out->append(digits, 1, std::string::npos);
    }
    char e[16];
    std::snprintf(e, sizeof(e), "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    *out += e;
  } else if (decpt <= 0) {
    *out += "0.";
    out->append(static_cast<size_t>(-decpt), '0');
    *out += digits;
  } else if (decpt < n) {
    out->append(digits, 0, static_cast<size_t>(decpt));
    out->push_back('.');
    out->append(digits, static_cast<size_t>(decpt), std::string::npos);
  } else {
    *out += digits;
    out->append(static_cast<size_t>(decpt - n), '0');
    *out += ".0";
  }
}

// float(lexeme) for a JSON number lexeme, overflow to +-inf and underflow to +-0 like Python.
double lexeme_to_double(std::string_view lexeme) {
  double d = 0;
  const auto res = std::from_chars(lexeme.data(), lexeme.data() + lexeme.size(), d);
  if (res.ec != std::errc::result_out_of_range) return d;
  // Decide overflow vs underflow from the decimal magnitude: leading integer digits + exponent.
  const bool negative = !lexeme.empty() && lexeme[0] == '-';
  long magnitude = 0;
  size_t i = negative ? 1 : 0;
  bool nonzero_int = false;
  long int_digits = 0;
  long leading_frac_zeros = 0;
  for (; i < lexeme.size() && is_digit(lexeme[i]); ++i) {
    if (lexeme[i] != '0') nonzero_int = true;
    if (nonzero_int) ++int_digits;
  }
  if (i < lexeme.size() && lexeme[i] == '.') {
    for (++i; i < lexeme.size() && lexeme[i] == '0'; ++i) ++leading_frac_zeros;
    while (i < lexeme.size() && is_digit(lexeme[i])) ++i;
  }
  long exponent = 0;
  if (i < lexeme.size() && (lexeme[i] == 'e' || lexeme[i] == 'E')) {
    ++i;
    const bool neg_exp = i < lexeme.size() && lexeme[i] == '-';
    if (i < lexeme.size() && (lexeme[i] == '-' || lexeme[i] == '+')) ++i;
    for (; i < lexeme.size() && is_digit(lexeme[i]); ++i) {
      if (exponent < 100000000) exponent = exponent * 10 + (lexeme[i] - '0');
    }
    if (neg_exp) exponent = -exponent;
  }
  magnitude = (nonzero_int ? int_digits : -leading_frac_zeros) + exponent;
  const double r = magnitude > 0 ? HUGE_VAL : 0.0;
  return negative ? -r : r;
}

void append_number(const Value& v, std::string* out) {
  if (v.text == "NaN" || v.text == "Infinity" || v.text == "-Infinity") {
    *out += v.text;
  } else if (v.is_integer) {
    *out += v.text == "-0" ? std::string_view("0") : std::string_view(v.text);
  } else {
    append_float_repr(lexeme_to_double(v.text), out);
  }
}

}  // namespace

Result<Value> parse(std::string_view text, int max_depth) {
  return Reader(text, max_depth).document();
}

void append_escaped(std::string_view raw, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < raw.size(); ++i) {
    const auto c = static_cast<unsigned char>(raw[i]);
    switch (c) {
      case '"': *out += "\\\""; continue;
      case '\\': *out += "\\\\"; continue;
      case '\n': *out += "\\n"; continue;
      case '\r': *out += "\\r"; continue;
      case '\t': *out += "\\t"; continue;
      case '\b': *out += "\\b"; continue;
      case '\f': *out += "\\f"; continue;
      default: break;
    }
    if (c < 0x20) {
      *out += "\\u00";
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 0xf]);
    } else if (c == 0xed && i + 2 < raw.size() &&
               (static_cast<unsigned char>(raw[i + 1]) & 0xe0) == 0xa0 &&
               (static_cast<unsigned char>(raw[i + 2]) & 0xc0) == 0x80) {
      // A lone surrogate stored in 3-byte form: write it back as an escape (valid JSON, no
      // invalid UTF-8 in the output).
      const uint32_t cp = 0xd000u | ((static_cast<unsigned char>(raw[i + 1]) & 0x3fu) << 6) |
                          (static_cast<unsigned char>(raw[i + 2]) & 0x3fu);
      *out += "\\u";
      for (int shift = 12; shift >= 0; shift -= 4) out->push_back(kHex[(cp >> shift) & 0xf]);
      i += 2;
    } else {
      out->push_back(static_cast<char>(c));
    }
  }
}

void append_quoted(std::string_view raw, std::string* out) {
  out->push_back('"');
  append_escaped(raw, out);
  out->push_back('"');
}

void dump_to(const Value& value, std::string* out, const Separators& sep) {
  switch (value.type) {
    case Type::kNull: *out += "null"; return;
    case Type::kBool: *out += value.boolean ? "true" : "false"; return;
    case Type::kNumber: append_number(value, out); return;
    case Type::kString: append_quoted(value.text, out); return;
    case Type::kArray:
      out->push_back('[');
      for (size_t i = 0; i < value.items.size(); ++i) {
        if (i > 0) *out += sep.item;
        dump_to(value.items[i], out, sep);
      }
      out->push_back(']');
      return;
    case Type::kObject:
      out->push_back('{');
      for (size_t i = 0; i < value.members.size(); ++i) {
        if (i > 0) *out += sep.item;
        append_quoted(value.members[i].key, out);
        *out += sep.key;
        dump_to(value.members[i].value, out, sep);
      }
      out->push_back('}');
      return;
  }
}

std::string dump(const Value& value, const Separators& sep) {
  std::string out;
  dump_to(value, &out, sep);
  return out;
}

bool truthy(const Value& value) {
  switch (value.type) {
    case Type::kNull: return false;
    case Type::kBool: return value.boolean;
    case Type::kNumber: {
      if (value.is_integer) return value.text != "0" && value.text != "-0";
      if (value.text == "NaN" || value.text == "Infinity" || value.text == "-Infinity") return true;
      return lexeme_to_double(value.text) != 0.0;
    }
    case Type::kString: return !value.text.empty();
    case Type::kArray: return !value.items.empty();
    case Type::kObject: return !value.members.empty();
  }
  return false;
}

}  // namespace ds4::chat::json
