// src/gguf/value.cpp: construction, conversion and display of GGUF metadata values.
#include "gguf/value.h"

#include <bit>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>

#include "base/check.h"

namespace ds4::gguf {
namespace {

bool is_scalar(ValueType t) { return t != ValueType::kString && t != ValueType::kArray; }
bool is_signed(ValueType t) {
  return t == ValueType::kI8 || t == ValueType::kI16 || t == ValueType::kI32 ||
         t == ValueType::kI64;
}
bool is_float(ValueType t) { return t == ValueType::kF32 || t == ValueType::kF64; }

// Reads one packed little-endian scalar of type t and widens it into Value's bit representation.
uint64_t load_scalar_bits(ValueType t, const uint8_t* p) {
  switch (t) {
    case ValueType::kU8:
    case ValueType::kBool: return p[0];
    case ValueType::kI8:
      return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(p[0])));
    case ValueType::kU16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case ValueType::kI16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return static_cast<uint64_t>(static_cast<int64_t>(v));
    }
    case ValueType::kU32:
    case ValueType::kF32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case ValueType::kI32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return static_cast<uint64_t>(static_cast<int64_t>(v));
    }
    case ValueType::kU64:
    case ValueType::kI64:
    case ValueType::kF64: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case ValueType::kString:
    case ValueType::kArray: break;
  }
  DS4_CHECK_MSG(false, "not a scalar type %u", static_cast<unsigned>(t));
  return 0;
}

void store_scalar_bits(ValueType t, uint64_t bits, uint8_t* p) {
  std::memcpy(p, &bits, scalar_bytes(t));  // little-endian host: the low bytes are the value
}

Value from_bits(ValueType t, uint64_t bits) {
  switch (t) {
    case ValueType::kU8: return Value::u8(static_cast<uint8_t>(bits));
    case ValueType::kI8: return Value::i8(static_cast<int8_t>(bits));
    case ValueType::kU16: return Value::u16(static_cast<uint16_t>(bits));
    case ValueType::kI16: return Value::i16(static_cast<int16_t>(bits));
    case ValueType::kU32: return Value::u32(static_cast<uint32_t>(bits));
    case ValueType::kI32: return Value::i32(static_cast<int32_t>(bits));
    case ValueType::kU64: return Value::u64(bits);
    case ValueType::kI64: return Value::i64(static_cast<int64_t>(bits));
    case ValueType::kF32: return Value::f32(std::bit_cast<float>(static_cast<uint32_t>(bits)));
    case ValueType::kF64: return Value::f64(std::bit_cast<double>(bits));
    case ValueType::kBool: return Value::boolean(bits != 0);
    case ValueType::kString:
    case ValueType::kArray: break;
  }
  DS4_CHECK_MSG(false, "not a scalar type %u", static_cast<unsigned>(t));
  return {};
}

}  // namespace

static_assert(std::endian::native == std::endian::little, "GGUF I/O assumes a little-endian host");

std::string_view to_string(ValueType t) {
  switch (t) {
    case ValueType::kU8: return "u8";
    case ValueType::kI8: return "i8";
    case ValueType::kU16: return "u16";
    case ValueType::kI16: return "i16";
    case ValueType::kU32: return "u32";
    case ValueType::kI32: return "i32";
    case ValueType::kF32: return "f32";
    case ValueType::kBool: return "bool";
    case ValueType::kString: return "string";
    case ValueType::kArray: return "array";
    case ValueType::kU64: return "u64";
    case ValueType::kI64: return "i64";
    case ValueType::kF64: return "f64";
  }
  return "unknown";
}

bool is_valid_value_type(uint32_t id) { return id <= static_cast<uint32_t>(ValueType::kF64); }

uint32_t scalar_bytes(ValueType t) {
  switch (t) {
    case ValueType::kU8:
    case ValueType::kI8:
    case ValueType::kBool: return 1;
    case ValueType::kU16:
    case ValueType::kI16: return 2;
    case ValueType::kU32:
    case ValueType::kI32:
    case ValueType::kF32: return 4;
    case ValueType::kU64:
    case ValueType::kI64:
    case ValueType::kF64: return 8;
    case ValueType::kString:
    case ValueType::kArray: return 0;
  }
  return 0;
}

Value Value::f32(float v) { return scalar(ValueType::kF32, std::bit_cast<uint32_t>(v)); }
Value Value::f64(double v) { return scalar(ValueType::kF64, std::bit_cast<uint64_t>(v)); }

Value Value::string(std::string v) {
  Value out;
  out.type_ = ValueType::kString;
  out.str_ = std::move(v);
  return out;
}

Value Value::packed_array(ValueType elem, uint64_t count, std::vector<uint8_t> bytes) {
  DS4_CHECK(is_scalar(elem));
  DS4_CHECK(bytes.size() == count * scalar_bytes(elem));
  Value out;
  out.type_ = ValueType::kArray;
  out.elem_type_ = elem;
  out.count_ = count;
  out.packed_ = std::move(bytes);
  return out;
}

Value Value::nested_array(ValueType elem, std::vector<Value> items) {
  DS4_CHECK(!is_scalar(elem));
  for (const Value& v : items) DS4_CHECK(v.type() == elem);
  Value out;
  out.type_ = ValueType::kArray;
  out.elem_type_ = elem;
  out.count_ = items.size();
  out.items_ = std::move(items);
  return out;
}

Value Value::array(ValueType elem, const std::vector<Value>& items) {
  if (!is_scalar(elem)) return nested_array(elem, items);
  const uint32_t w = scalar_bytes(elem);
  std::vector<uint8_t> bytes(items.size() * w);
  for (size_t i = 0; i < items.size(); ++i) {
    DS4_CHECK(items[i].type() == elem);
    store_scalar_bits(elem, items[i].bits_, bytes.data() + i * w);
  }
  return packed_array(elem, items.size(), std::move(bytes));
}

Value Value::string_array(const std::vector<std::string>& items) {
  std::vector<Value> v;
  v.reserve(items.size());
  for (const auto& s : items) v.push_back(string(s));
  return nested_array(ValueType::kString, std::move(v));
}

template <class T>
static Value pack_span(ValueType elem, std::span<const T> items) {
  std::vector<uint8_t> bytes(items.size_bytes());
  if (!items.empty()) std::memcpy(bytes.data(), items.data(), bytes.size());
  return Value::packed_array(elem, items.size(), std::move(bytes));
}

Value Value::u32_array(std::span<const uint32_t> items) {
  return pack_span(ValueType::kU32, items);
}
Value Value::i32_array(std::span<const int32_t> items) { return pack_span(ValueType::kI32, items); }
Value Value::f32_array(std::span<const float> items) { return pack_span(ValueType::kF32, items); }

Value Value::at(uint64_t i) const {
  DS4_CHECK_MSG(type_ == ValueType::kArray && i < count_, "index %" PRIu64 " of %" PRIu64, i,
                count_);
  if (!is_scalar(elem_type_)) return items_[i];
  return from_bits(elem_type_,
                   load_scalar_bits(elem_type_, packed_.data() + i * scalar_bytes(elem_type_)));
}

std::optional<uint64_t> Value::as_u64() const {
  if (!is_scalar(type_) || is_float(type_) || type_ == ValueType::kBool) return std::nullopt;
  if (is_signed(type_) && static_cast<int64_t>(bits_) < 0) return std::nullopt;
  return bits_;
}

std::optional<int64_t> Value::as_i64() const {
  if (!is_scalar(type_) || is_float(type_) || type_ == ValueType::kBool) return std::nullopt;
  if (type_ == ValueType::kU64 &&
      bits_ > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return std::nullopt;
  return static_cast<int64_t>(bits_);
}

std::optional<double> Value::as_f64() const {
  if (type_ == ValueType::kF32) return std::bit_cast<float>(static_cast<uint32_t>(bits_));
  if (type_ == ValueType::kF64) return std::bit_cast<double>(bits_);
  if (type_ == ValueType::kU64) return static_cast<double>(bits_);
  if (const auto i = as_i64()) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<bool> Value::as_bool() const {
  if (type_ != ValueType::kBool) return std::nullopt;
  return bits_ != 0;
}

std::optional<std::string_view> Value::as_string() const {
  if (type_ != ValueType::kString) return std::nullopt;
  return std::string_view(str_);
}

std::optional<std::vector<int64_t>> Value::as_i64_array() const {
  if (type_ != ValueType::kArray || !is_scalar(elem_type_)) return std::nullopt;
  std::vector<int64_t> out;
  out.reserve(count_);
  for (uint64_t i = 0; i < count_; ++i) {
    const auto v = at(i).as_i64();
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

std::optional<std::vector<double>> Value::as_f64_array() const {
  if (type_ != ValueType::kArray || !is_scalar(elem_type_)) return std::nullopt;
  std::vector<double> out;
  out.reserve(count_);
  for (uint64_t i = 0; i < count_; ++i) {
    const auto v = at(i).as_f64();
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

std::optional<std::vector<std::string_view>> Value::as_string_array() const {
  if (type_ != ValueType::kArray || elem_type_ != ValueType::kString) return std::nullopt;
  std::vector<std::string_view> out;
  out.reserve(items_.size());
  for (const Value& v : items_) out.push_back(v.str_);
  return out;
}

std::string Value::to_display(size_t max_items) const {
  char buf[64];
  switch (type_) {
    case ValueType::kString: {
      std::string out = "\"";
      for (char c : str_.substr(0, 200)) {
        if (c == '\n')
          out += "\\n";
        else if (c == '"')
          out += "\\\"";
        else if (static_cast<unsigned char>(c) < 0x20)
          out += '?';
        else
          out += c;
      }
      if (str_.size() > 200) out += "...";
      return out + "\"";
    }
    case ValueType::kArray: {
      std::string out = "[";
      const uint64_t shown = count_ < max_items ? count_ : max_items;
      for (uint64_t i = 0; i < shown; ++i) {
        if (i) out += ", ";
        out += at(i).to_display(max_items);
      }
      if (shown < count_) {
        std::snprintf(buf, sizeof buf, ", ... (%" PRIu64 " total)", count_);
        out += buf;
      }
      return out + "]";
    }
    case ValueType::kBool: return bits_ ? "true" : "false";
    case ValueType::kF32:
    case ValueType::kF64: std::snprintf(buf, sizeof buf, "%.9g", *as_f64()); return buf;
    default: break;
  }
  if (is_signed(type_)) {
    std::snprintf(buf, sizeof buf, "%" PRId64, static_cast<int64_t>(bits_));
  } else {
    std::snprintf(buf, sizeof buf, "%" PRIu64, bits_);
  }
  return buf;
}

bool operator==(const Value& a, const Value& b) {
  return a.type_ == b.type_ && a.elem_type_ == b.elem_type_ && a.bits_ == b.bits_ &&
         a.count_ == b.count_ && a.str_ == b.str_ && a.packed_ == b.packed_ && a.items_ == b.items_;
}

}  // namespace ds4::gguf
