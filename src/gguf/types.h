// src/gguf/types.h: GGUF tensor type ids and their storage geometry (model.md §2.1).
// Owns: the type id enum, block size / bytes per block, names, and byte-size arithmetic.
// Does not own: the block layouts themselves (quant/blocks.h asserts its structs against this
// table).
#pragma once

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

// Geometry of a known type id; nullopt for ids no GGUF writer produces (e.g. 4, 5, 31+).
std::optional<TypeInfo> type_info(uint32_t id);
std::string_view to_string(GgufType t);
// Parses a name such as "q2_k" or "IQ2_XXS" (case-insensitive).
std::optional<GgufType> type_from_name(std::string_view name);
// Every known type, in id order.
std::span<const TypeInfo> all_types();

// Bytes of `n_elements` values of type `t`, or nullopt when n_elements is not a whole number of
// blocks or the product overflows uint64.
std::optional<uint64_t> byte_size(GgufType t, uint64_t n_elements);

}  // namespace ds4::gguf
