// src/gen/tool_id.h: unguessable tool-call ids (features.md §1.12: "call_" + 32 hex).
// Owns: drawing the id bytes from the kernel's CSPRNG (getrandom).
#pragma once

#include <string>
#include <string_view>

namespace ds4::gen {

// `prefix` followed by 32 lowercase hex digits (128 random bits).
std::string new_tool_id(std::string_view prefix = "call_");

}  // namespace ds4::gen
