// src/tui/colors.h: the ANSI colour escapes the agent's output uses (features.md §5.8: thinking in
// grey). SGR sequences only; Screen::print passes them through and counts them as 0 columns.
#pragma once

#include <string_view>

namespace ds4::tui::color {

inline constexpr std::string_view kReset = "\x1b[0m";
inline constexpr std::string_view kBold = "\x1b[1m";
inline constexpr std::string_view kDim = "\x1b[2m";
inline constexpr std::string_view kGrey = "\x1b[90m";  // bright black: thinking
inline constexpr std::string_view kRed = "\x1b[31m";
inline constexpr std::string_view kGreen = "\x1b[32m";
inline constexpr std::string_view kYellow = "\x1b[33m";
inline constexpr std::string_view kBlue = "\x1b[34m";
inline constexpr std::string_view kMagenta = "\x1b[35m";
inline constexpr std::string_view kCyan = "\x1b[36m";
inline constexpr std::string_view kInverse = "\x1b[7m";

}  // namespace ds4::tui::color
