// src/agent/commands.h: the agent's slash commands (features.md §5.7) as data.
// Owns: the command table (name, arguments, help line, whether it needs the model idle), parsing
// a submitted line into a command, and Tab completion of command names and session ids.
// Does not own: running the commands (the app's worker) or the keys (the UI).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ds4::agent {

enum class CommandKind {
  kHelp,
  kSave,
  kCompact,
  kList,
  kSwitch,
  kDel,
  kStrip,
  kHistory,
  kNew,
  kThink,
  kNoThink,
  kPower,
  kQuit,
  kUnknown,  // a line that starts with '/' and names no command
};

struct CommandInfo {
  std::string_view name;  // "/save"
  CommandKind kind;
  std::string_view args;  // "<id prefix>", "[N]" or empty
  std::string_view help;
  // Needs the model idle: refused while a turn runs ("command requires the model to be idle");
  // /save and /compact are scheduled for the next safe point instead.
  bool needs_idle;
  bool takes_id;  // its argument is a session id prefix (Tab completes it)
};

std::span<const CommandInfo> command_table();

struct Command {
  CommandKind kind = CommandKind::kUnknown;
  std::string name;                   // as typed, e.g. "/swi" for an unknown one
  std::string arg;                    // the rest of the line, trimmed
  const CommandInfo* info = nullptr;  // null for kUnknown
};

// A line that starts with '/' is a command (kUnknown when it names none); any other line is a
// prompt (nullopt). Surrounding blanks are ignored; "/exit" is "/quit".
std::optional<Command> parse_command(std::string_view line);

// Candidates for the word at the end of `line` (the editor's text before the cursor): command
// names after a lone '/...', session ids after a command that takes one (`ids`: most recent
// first).
std::vector<std::string> complete_command(std::string_view line,
                                          const std::vector<std::string>& ids);

// The /help text: one line per command, then the keys.
std::string help_text();

}  // namespace ds4::agent
