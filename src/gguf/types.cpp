// src/gguf/types.cpp: the GGUF type table (ids, names, block geometry).
#include "gguf/types.h"

#include <array>
#include <cctype>

namespace ds4::gguf {
namespace {

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

std::string_view to_string(GgufType t) {
  const auto info = type_info(static_cast<uint32_t>(t));
  return info ? info->name : std::string_view("unknown");
}

std::optional<GgufType> type_from_name(std::string_view name) {
  for (const TypeInfo& t : detail::kTypes) {
    if (iequals(t.name, name)) return t.type;
  }
  return std::nullopt;
}

std::span<const TypeInfo> all_types() { return detail::kTypes; }

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
