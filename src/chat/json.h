// src/chat/json.h: the small JSON model the chat module needs to reproduce DeepSeek's Python
// encoder. Owns: parsing JSON text the way Python's json.loads does (member order kept, duplicate
// keys keep the first position and the last value, integers exact, NaN/Infinity accepted) and
// writing it the way json.dumps(value, ensure_ascii=False) does (", " and ": " separators, float
// repr). Does not own: protocol JSON (api/ uses nlohmann-json); nothing here is visible outside
// src/chat.
//
// Why not nlohmann-json: prompt bytes must match the Python reference exactly, which needs the
// number lexemes (big integers, float repr differs from nlohmann's for 1e15..1e16) and a depth
// bound for hostile model output; a 300-line reader is simpler than bending a general library.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ds4/status.h"

namespace ds4::chat::json {

enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

struct Member;

struct Value {
  Type type = Type::kNull;
  bool boolean = false;
  bool is_integer = false;      // kNumber: no fraction/exponent in the lexeme (a Python int)
  std::string text;             // kString: decoded bytes; kNumber: the lexeme (or NaN/Infinity)
  std::vector<Value> items;     // kArray
  std::vector<Member> members;  // kObject, in first-appearance order

  bool is_object() const { return type == Type::kObject; }
  bool is_string() const { return type == Type::kString; }
};

struct Member {
  std::string key;
  Value value;
};

inline constexpr int kMaxDepth = 256;

// Parses one JSON document (surrounding whitespace allowed). Never throws.
Result<Value> parse(std::string_view text, int max_depth = kMaxDepth);

// The text between array items / object members and between a key and its value.
struct Separators {
  std::string_view item;
  std::string_view key;
};
inline constexpr Separators kPythonSeparators{", ", ": "};  // json.dumps' defaults
inline constexpr Separators kCompactSeparators{",", ":"};   // JSON.stringify, minified JSON

// json.dumps(value, ensure_ascii=False), or with other separators.
std::string dump(const Value& value, const Separators& sep = kPythonSeparators);
void dump_to(const Value& value, std::string* out, const Separators& sep = kPythonSeparators);

// A JSON string literal of raw bytes, escaped like json.dumps(ensure_ascii=False).
void append_quoted(std::string_view raw, std::string* out);
// The escaped body of a string literal (no quotes); `raw` must not split a UTF-8 character
// when streaming, since bytes >= 0x80 are copied through.
void append_escaped(std::string_view raw, std::string* out);

// Python truthiness: null, false, 0, 0.0, "", [] and {} are false.
bool truthy(const Value& value);

}  // namespace ds4::chat::json
