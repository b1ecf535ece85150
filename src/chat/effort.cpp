// src/chat/effort.cpp: think modes, reasoning-effort mapping and the effort-prefix table, plus the
// to_string() of the public enums.
// Owns: the only copy of the effort prefix texts (data, byte-exact) and which variant uses which.
// Does not own: where the prefix goes in the prompt (template.cpp puts it right after BOS).
#include <string_view>

#include "ds4/chat.h"

namespace ds4::chat {
namespace {

// V4 "max" (model.md §6.6; ds4.c:62-65) = V4-Flash-0731 "high".
constexpr std::string_view kAbsoluteMaximumPrefix =
    "Reasoning Effort: Absolute maximum with no shortcuts permitted.\n"
    "You MUST be very thorough in your thinking and comprehensively decompose the problem to "
    "resolve the root cause, rigorously stress-testing your logic against all potential paths, "
    "edge cases, and adversarial scenarios.\n"
    "Explicitly write out your entire deliberation process, documenting every intermediate step, "
    "considered alternative, and rejected hypothesis to ensure absolutely no assumption is left "
    "unchecked.\n\n";

// V4-Flash-0731 "max" (the checkpoint's encoding/encoding_dsv4.py, as quoted by several public
// integrations; see docs/chat.md for provenance). Note the em dash (U+2014) in the first line.
constexpr std::string_view kBeyondMaximumPrefix =
    "Reasoning Effort: Beyond maximum \u2014 exhaustive, relentless, and uncompromising.\n"
    "You MUST reason with the utmost depth and rigor, leaving absolutely nothing to chance: "
    "exhaustively decompose the problem into its most fundamental components, trace every causal "
    "chain to its root, and resolve the underlying cause rather than any surface symptom.\n"
    "Do not stop reasoning until you have independently verified the solution from multiple angles "
    "and are certain that no assumption remains unchecked and no error remains undiscovered.\n\n";

struct EffortRow {
  ModelVariant variant;
  ThinkMode mode;
  std::string_view prefix;
};

// The whole variant switch: rows not listed have no prefix.
constexpr EffortRow kEffortPrefixes[] = {
    {ModelVariant::kV4, ThinkMode::kMax, kAbsoluteMaximumPrefix},
    {ModelVariant::kV4Flash0731, ThinkMode::kHigh, kAbsoluteMaximumPrefix},
    {ModelVariant::kV4Flash0731, ThinkMode::kMax, kBeyondMaximumPrefix},
};

}  // namespace

std::string_view effort_prefix(ModelVariant variant, ThinkMode mode) {
  for (const EffortRow& row : kEffortPrefixes) {
    if (row.variant == variant && row.mode == mode) return row.prefix;
  }
  return {};
}

std::optional<ThinkMode> think_mode_from_effort(std::string_view effort, ModelVariant variant) {
  if (effort == "none") return ThinkMode::kNone;
  if (effort == "max") return ThinkMode::kMax;
  if (effort == "xhigh" || effort == "high" || effort == "medium") return ThinkMode::kHigh;
  if (effort == "low" || effort == "minimal") {
    return variant == ModelVariant::kV4Flash0731 ? ThinkMode::kLow : ThinkMode::kHigh;
  }
  return std::nullopt;
}

ThinkMode effective_think_mode(ThinkMode requested, int64_t context_size) {
  if (requested == ThinkMode::kMax && context_size < kThinkMaxMinContext) return ThinkMode::kHigh;
  return requested;
}

const char* to_string(Role role) {
  switch (role) {
    case Role::kSystem: return "system";
    case Role::kDeveloper: return "developer";
    case Role::kUser: return "user";
    case Role::kAssistant: return "assistant";
    case Role::kTool: return "tool";
    case Role::kLatestReminder: return "latest_reminder";
  }
  return "unknown";
}

std::optional<Role> role_from_string(std::string_view name) {
  for (Role r : {Role::kSystem, Role::kDeveloper, Role::kUser, Role::kAssistant, Role::kTool,
                 Role::kLatestReminder}) {
    if (name == to_string(r)) return r;
  }
  return std::nullopt;
}

const char* to_string(ContentBlockKind kind) {
  return kind == ContentBlockKind::kText ? "text" : "tool_result";
}

const char* to_string(ThinkMode mode) {
  switch (mode) {
    case ThinkMode::kNone: return "none";
    case ThinkMode::kLow: return "low";
    case ThinkMode::kHigh: return "high";
    case ThinkMode::kMax: return "max";
  }
  return "unknown";
}

const char* to_string(ModelVariant variant) {
  return variant == ModelVariant::kV4 ? "v4" : "v4-flash-0731";
}

const char* to_string(OutputEventKind kind) {
  switch (kind) {
    case OutputEventKind::kReasoning: return "reasoning";
    case OutputEventKind::kText: return "text";
    case OutputEventKind::kToolCallBegin: return "tool_call_begin";
    case OutputEventKind::kToolCallArguments: return "tool_call_arguments";
    case OutputEventKind::kToolCallEnd: return "tool_call_end";
    case OutputEventKind::kDone: return "done";
  }
  return "unknown";
}

}  // namespace ds4::chat
