// src/gguf/types.h: GGUF tensor type ids and their storage geometry (model.md §2.1).
// Owns: the type id enum, block size / bytes per block, names, and byte-size arithmetic.
// Does not own: the block layouts themselves (quant/blocks.h asserts its structs against this
// table).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace ds4::gguf {

enum class GgufType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
};

struct TypeInfo {
  GgufType type;
  std::string_view name;  // lower-case, as GGUF tools print it ("q8_0", "iq2_xxs")
  uint32_t block_elems;   // values per block (1 for plain scalar types)
  uint32_t block_bytes;   // bytes per block
};

namespace detail {
using T = GgufType;
inline constexpr std::array<TypeInfo, 29> kTypes{{
    {T::kF32, "f32", 1, 4},
    {T::kF16, "f16", 1, 2},
    {T::kQ4_0, "q4_0", 32, 18},
    {T::kQ4_1, "q4_1", 32, 20},
    {T::kQ5_0, "q5_0", 32, 22},
    {T::kQ5_1, "q5_1", 32, 24},
    {T::kQ8_0, "q8_0", 32, 34},
    {T::kQ8_1, "q8_1", 32, 36},
    {T::kQ2_K, "q2_k", 256, 84},
    {T::kQ3_K, "q3_k", 256, 110},
    {T::kQ4_K, "q4_k", 256, 144},
    {T::kQ5_K, "q5_k", 256, 176},
    {T::kQ6_K, "q6_k", 256, 210},
    {T::kQ8_K, "q8_k", 256, 292},
    {T::kIQ2_XXS, "iq2_xxs", 256, 66},
    {T::kIQ2_XS, "iq2_xs", 256, 74},
    {T::kIQ3_XXS, "iq3_xxs", 256, 98},
    {T::kIQ1_S, "iq1_s", 256, 50},
    {T::kIQ4_NL, "iq4_nl", 32, 18},
    {T::kIQ3_S, "iq3_s", 256, 110},
    {T::kIQ2_S, "iq2_s", 256, 82},
    {T::kIQ4_XS, "iq4_xs", 256, 136},
    {T::kI8, "i8", 1, 1},
    {T::kI16, "i16", 1, 2},
    {T::kI32, "i32", 1, 4},
    {T::kI64, "i64", 1, 8},
    {T::kF64, "f64", 1, 8},
    {T::kIQ1_M, "iq1_m", 256, 56},
    {T::kBF16, "bf16", 1, 2},
}};

}  // namespace detail

// Geometry of a known type id; nullopt for ids no GGUF writer produces (e.g. 4, 5, 31+).
// constexpr, so block structs elsewhere can static_assert their size against this table.
constexpr std::optional<TypeInfo> type_info(uint32_t id) {
  for (const TypeInfo& t : detail::kTypes) {
    if (static_cast<uint32_t>(t.type) == id) return t;
  }
  return std::nullopt;
}
constexpr uint32_t block_bytes(GgufType t) {
  return type_info(static_cast<uint32_t>(t))->block_bytes;
}
std::string_view to_string(GgufType t);
// Parses a name such as "q2_k" or "IQ2_XXS" (case-insensitive).
std::optional<GgufType> type_from_name(std::string_view name);
// Every known type, in id order.
std::span<const TypeInfo> all_types();

// Bytes of `n_elements` values of type `t`, or nullopt when n_elements is not a whole number of
// blocks or the product overflows uint64.
std::optional<uint64_t> byte_size(GgufType t, uint64_t n_elements);

}  // namespace ds4::gguf
