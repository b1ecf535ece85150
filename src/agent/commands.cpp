// src/agent/commands.cpp: the command table, parsing and completion.
#include "agent/commands.h"

#include <algorithm>
#include <array>

#include "base/text.h"

namespace ds4::agent {
namespace {

constexpr std::array kCommands = {
    CommandInfo{"/help", CommandKind::kHelp, "", "list commands and keys", false, false},
    CommandInfo{"/save", CommandKind::kSave, "", "save the session now", false, false},
    CommandInfo{"/compact", CommandKind::kCompact, "", "summarise the conversation to free context",
                false, false},
    CommandInfo{"/list", CommandKind::kList, "", "saved sessions of this model, recent first", true,
                false},
    CommandInfo{"/switch", CommandKind::kSwitch, "<id prefix>", "resume a saved session", true,
                true},
    CommandInfo{"/del", CommandKind::kDel, "<id prefix>", "delete a saved session", true, true},
    CommandInfo{"/strip", CommandKind::kStrip, "<id prefix>",
                "drop a saved session's KV, keep its text (resuming it evaluates the text)", true,
                true},
    CommandInfo{"/history", CommandKind::kHistory, "[N]", "the last N user turns (default 3)", true,
                false},
    CommandInfo{"/new", CommandKind::kNew, "", "start a new session", true, false},
    CommandInfo{"/think", CommandKind::kThink, "", "think before answering (from the next turn)",
                true, false},
    CommandInfo{"/nothink", CommandKind::kNoThink, "", "answer without thinking", true, false},
    CommandInfo{"/power", CommandKind::kPower, "[N]",
                "show or set the percent of full speed, 1-100 (applies at once)", false, false},
    CommandInfo{"/quit", CommandKind::kQuit, "", "leave (also /exit, Ctrl+D)", false, false},
};

}  // namespace

std::span<const CommandInfo> command_table() { return kCommands; }

std::optional<Command> parse_command(std::string_view line) {
  line = base::trim(line);
  if (line.empty() || line.front() != '/') return std::nullopt;
  const size_t space = line.find_first_of(" \t\n");
  Command c;
  c.name = std::string(line.substr(0, space));
  if (space != std::string_view::npos) c.arg = std::string(base::trim(line.substr(space)));
  const std::string_view name = c.name == "/exit" ? std::string_view("/quit") : c.name;
  for (const CommandInfo& info : kCommands) {
    if (info.name == name) {
      c.kind = info.kind;
      c.info = &info;
    }
  }
  return c;
}

std::vector<std::string> complete_command(std::string_view line,
                                          const std::vector<std::string>& ids) {
  std::vector<std::string> out;
  const size_t space = line.find(' ');
  if (space == std::string_view::npos) {
    if (line.empty() || line.front() != '/') return out;
    for (const CommandInfo& info : kCommands) {
      if (info.name.starts_with(line)) out.emplace_back(info.name);
    }
    return out;
  }
  const std::optional<Command> c = parse_command(line.substr(0, space));
  if (!c || c->info == nullptr || !c->info->takes_id) return out;
  std::string_view word = line.substr(space + 1);
  while (!word.empty() && word.front() == ' ') word.remove_prefix(1);
  if (word.find(' ') != std::string_view::npos) return out;
  for (const std::string& id : ids) {
    if (std::string_view(id).starts_with(word)) out.push_back(id);
  }
  return out;
}

std::string help_text() {
  std::string out = "Commands:\n";
  for (const CommandInfo& info : kCommands) {
    std::string head = std::string(info.name);
    if (!info.args.empty()) head += " " + std::string(info.args);
    head.resize(std::max<size_t>(head.size() + 1, 24), ' ');
    out += "  " + head + std::string(info.help) + "\n";
  }
  out +=
      "Keys:\n"
      "  Enter         send (while the model works: queue the message)\n"
      "  Ctrl+C        interrupt prefill, generation or compaction; at idle: clear the line\n"
      "  Ctrl+X        take the first queued message back into the editor\n"
      "  ESC           interrupt and send the queued messages now\n"
      "  Tab           complete a command or a session id\n"
      "  Up/Down       input history\n"
      "  Ctrl+D        leave (on an empty line)\n";
  return out;
}

}  // namespace ds4::agent
