// src/gguf/types.cpp: the GGUF type table (ids, names, block geometry).
#include "gguf/types.h"

#include <array>
#include <cctype>

namespace ds4::gguf {
namespace {

using T = GgufType;
constexpr std::array<TypeInfo, 29> kTypes{{
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

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

}  // namespace

std::optional<TypeInfo> type_info(uint32_t id) {
  for (const TypeInfo& t : kTypes) {
    if (static_cast<uint32_t>(t.type) == id) return t;
  }
  return std::nullopt;
}

std::string_view to_string(GgufType t) {
  const auto info = type_info(static_cast<uint32_t>(t));
  return info ? info->name : std::string_view("unknown");
}

std::optional<GgufType> type_from_name(std::string_view name) {
  for (const TypeInfo& t : kTypes) {
    if (iequals(t.name, name)) return t.type;
  }
  return std::nullopt;
}

std::span<const TypeInfo> all_types() { return kTypes; }

std::optional<uint64_t> byte_size(GgufType t, uint64_t n_elements) {
  const auto info = type_info(static_cast<uint32_t>(t));
  if (!info || n_elements % info->block_elems != 0) return std::nullopt;
  const uint64_t blocks = n_elements / info->block_elems;
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(blocks, static_cast<uint64_t>(info->block_bytes), &bytes))
    return std::nullopt;
  return bytes;
}

}  // namespace ds4::gguf
