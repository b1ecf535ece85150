// src/gguf/value.h: one GGUF metadata value of any of the 13 value types, arrays nested freely.
// Owns: the value's storage (strings and arrays are copied out of the file on parse; tensor data,
// which is what is large, stays zero-copy in the reader). Arrays of scalars are kept packed in
// their file encoding, so an array costs what it costs on disk, not one Value per element.
// Does not own: parsing or serialisation (reader.cpp / writer.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ds4::gguf {

enum class ValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

std::string_view to_string(ValueType t);
bool is_valid_value_type(uint32_t id);
// Bytes one scalar of this type occupies in the file; 0 for string and array.
uint32_t scalar_bytes(ValueType t);

class Value {
 public:
  Value() = default;
  static Value u8(uint8_t v) { return scalar(ValueType::kU8, v); }
  static Value i8(int8_t v) { return signed_scalar(ValueType::kI8, v); }
  static Value u16(uint16_t v) { return scalar(ValueType::kU16, v); }
  static Value i16(int16_t v) { return signed_scalar(ValueType::kI16, v); }
  static Value u32(uint32_t v) { return scalar(ValueType::kU32, v); }
  static Value i32(int32_t v) { return signed_scalar(ValueType::kI32, v); }
  static Value u64(uint64_t v) { return scalar(ValueType::kU64, v); }
  static Value i64(int64_t v) { return signed_scalar(ValueType::kI64, v); }
  static Value f32(float v);
  static Value f64(double v);
  static Value boolean(bool v) { return scalar(ValueType::kBool, v ? 1 : 0); }
  static Value string(std::string v);
  // An array of `elem`; every item must have that type (DS4_CHECK). Scalar items are packed.
  static Value array(ValueType elem, const std::vector<Value>& items);
  static Value string_array(const std::vector<std::string>& items);
  static Value u32_array(std::span<const uint32_t> items);
  static Value i32_array(std::span<const int32_t> items);
  static Value f32_array(std::span<const float> items);
  // An array of scalars from bytes already in the GGUF encoding (little-endian, packed).
  static Value packed_array(ValueType elem, uint64_t count, std::vector<uint8_t> bytes);
  // An array of strings or arrays.
  static Value nested_array(ValueType elem, std::vector<Value> items);

  ValueType type() const { return type_; }
  // Element type of an array (meaningless for scalars).
  ValueType elem_type() const { return elem_type_; }
  // Number of array elements (0 for scalars).
  uint64_t size() const { return count_; }
  // Element i of an array, materialised as a Value.
  Value at(uint64_t i) const;
  // Scalar arrays: the packed little-endian elements. Empty for other types.
  std::span<const uint8_t> packed() const { return packed_; }
  // Arrays of strings or arrays: the elements. Empty for other types.
  const std::vector<Value>& items() const { return items_; }
  const std::string& str() const { return str_; }

  // Raw scalar payloads. For integer types, as_u64/as_i64 return the value widened (sign-extended
  // for signed types); for floats, as_f64 returns the value. Bools are 0/1 in the integer views.
  uint64_t raw_u64() const { return bits_; }

  // Typed accessors that succeed only when the value's type allows the conversion exactly.
  std::optional<uint64_t> as_u64() const;  // any unsigned type, or a non-negative signed one
  std::optional<int64_t> as_i64() const;   // any integer type that fits
  std::optional<double> as_f64() const;    // f32/f64 and any integer type
  std::optional<bool> as_bool() const;     // bool only
  std::optional<std::string_view> as_string() const;
  // Whole-array views; nullopt unless this is an array whose elements convert as above.
  std::optional<std::vector<int64_t>> as_i64_array() const;
  std::optional<std::vector<double>> as_f64_array() const;
  std::optional<std::vector<std::string_view>> as_string_array() const;

  // Short human-readable rendering; arrays show at most `max_items` items then "... (N total)".
  std::string to_display(size_t max_items = 8) const;

  friend bool operator==(const Value& a, const Value& b);

 private:
  static Value scalar(ValueType t, uint64_t bits) {
    Value v;
    v.type_ = t;
    v.bits_ = bits;
    return v;
  }
  static Value signed_scalar(ValueType t, int64_t v) { return scalar(t, static_cast<uint64_t>(v)); }

  ValueType type_ = ValueType::kU8;
  ValueType elem_type_ = ValueType::kU8;
  uint64_t bits_ = 0;  // integers (two's complement, sign-extended), bool, or IEEE bits of f32/f64
  uint64_t count_ = 0;
  std::string str_;
  std::vector<uint8_t> packed_;
  std::vector<Value> items_;
};

}  // namespace ds4::gguf
