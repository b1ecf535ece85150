// src/agent/dispatch.cpp: the tool table and the per-round tool message.
#include "agent/dispatch.h"

#include <array>
#include <string_view>
#include <vector>

#include "agent/edit.h"
#include "agent/file_tools.h"
#include "agent/search.h"

namespace ds4::agent {
namespace {

// Parameters are looked up by these names; an absent optional one takes the tool's default.
ToolResult run_read(ToolContext& ctx, const ToolParams& p) {
  ReadRequest req{.path = string_param(p, "path", ""),
                  .start_line = int_param(p, "start_line", 1, 1, INT64_MAX),
                  .max_lines = int_param(p, "max_lines", kDefaultReadLines, 1, kMaxReadLines),
                  .whole = bool_param(p, "whole", false),
                  .raw = bool_param(p, "raw", false)};
  return read_file(ctx.workspace, req, &ctx.cursor);
}

ToolResult run_more(ToolContext& ctx, const ToolParams& p) {
  return read_more(ctx.workspace, int_param(p, "count", kDefaultReadLines, 1, kMaxReadLines),
                   &ctx.cursor);
}

ToolResult run_write(ToolContext& ctx, const ToolParams& p) {
  return write_file(ctx.workspace, *find_param(p, "path"), *find_param(p, "content"));
}

ToolResult run_edit(ToolContext& ctx, const ToolParams& p) {
  return edit_file(ctx.workspace, {.path = *find_param(p, "path"),
                                   .old_text = *find_param(p, "old"),
                                   .new_text = *find_param(p, "new")});
}

ToolResult run_search(ToolContext& ctx, const ToolParams& p) {
  SearchRequest req{
      .query = *find_param(p, "query"),
      .path = string_param(p, "path", "."),
      .mode = string_param(p, "mode", "literal"),
      .glob = string_param(p, "glob", ""),
      .context = int_param(p, "context", 0, 0, kMaxSearchContext),
      .max_results = int_param(p, "max_results", kDefaultSearchResults, 1, kMaxSearchResults),
      .case_sensitive = bool_param(p, "case_sensitive", true)};
  return search_files(ctx.workspace, req);
}

ToolResult run_list(ToolContext& ctx, const ToolParams& p) {
  return list_dir(ctx.workspace, string_param(p, "path", "."));
}

ToolResult run_bash(ToolContext& ctx, const ToolParams& p) {
  return ctx.jobs.run(*find_param(p, "command"),
                      int_param(p, "timeout_sec", kDefaultBashTimeoutSec, 1, kMaxBashTimeoutSec),
                      int_param(p, "refresh_sec", kDefaultBashRefreshSec, 1, kMaxBashRefreshSec),
                      ctx.cancel);
}

// A job id that does not parse becomes 0, which no job has: the tool then names the id it lacks.
int64_t job_param(const ToolParams& p) { return int_param(p, "job", 0, 0, INT64_MAX); }

ToolResult run_bash_status(ToolContext& ctx, const ToolParams& p) {
  return ctx.jobs.status(job_param(p));
}

ToolResult run_bash_stop(ToolContext& ctx, const ToolParams& p) {
  return ctx.jobs.stop(job_param(p));
}

struct ToolEntry {
  std::string_view name;
  std::array<std::string_view, 3> required;  // empty names pad the list
  ToolResult (*run)(ToolContext&, const ToolParams&);
};

constexpr std::array kTools = {
    ToolEntry{"read", {"path"}, run_read},
    ToolEntry{"more", {}, run_more},
    ToolEntry{"write", {"path", "content"}, run_write},
    ToolEntry{"edit", {"path", "old", "new"}, run_edit},
    ToolEntry{"search", {"query"}, run_search},
    ToolEntry{"list", {}, run_list},
    ToolEntry{"bash", {"command"}, run_bash},
    ToolEntry{"bash_status", {"job"}, run_bash_status},
    ToolEntry{"bash_stop", {"job"}, run_bash_stop},
};

}  // namespace

ToolResult run_tool(ToolContext& ctx, const ToolCall& call) {
  for (const ToolEntry& tool : kTools) {
    if (tool.name != call.name) continue;
    for (std::string_view param : tool.required)
      if (!param.empty() && !find_param(call.params, param))
        return tool_error("missing required parameter '" + std::string(param) + "' for tool " +
                          call.name);
    return tool.run(ctx, call.params);
  }
  return tool_error("unknown tool: " + call.name);
}

std::string combine_tool_results(std::span<const ToolCall> calls,
                                 std::span<const ToolResult> results) {
  std::string out;
  for (size_t i = 0; i < calls.size() && i < results.size(); ++i) {
    if (i > 0) out += "\n\n";
    out += "Tool result " + std::to_string(i + 1) + " (" + calls[i].name + "):\n";
    std::string_view text = results[i].text;
    while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    out += text;
  }
  return out;
}

std::string run_tool_calls(ToolContext& ctx, std::span<const ToolCall> calls) {
  if (calls.empty()) return tool_error("the tool call block holds no calls").text;
  std::vector<ToolResult> results;
  results.reserve(calls.size());
  for (const ToolCall& call : calls) results.push_back(run_tool(ctx, call));
  return combine_tool_results(calls, results);
}

}  // namespace ds4::agent
