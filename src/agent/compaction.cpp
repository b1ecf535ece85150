// src/agent/compaction.cpp: the model-free parts of compaction.
#include "agent/compaction.h"

#include <algorithm>

#include "base/text.h"

namespace ds4::agent {

bool needs_compaction(int used, int ctx) {
  if (ctx <= 0) return false;
  const int free_tokens = ctx - used;
  return used >= static_cast<int>(kCompactUsedFraction * ctx) ||
         free_tokens <= std::min(kCompactFreeTokens, ctx / 4);
}

std::string_view compaction_request() {
  return "The conversation is about to be compacted: everything above will be replaced by the "
         "summary you write now, followed by the most recent turns. Write a durable summary of "
         "the task state that lets you continue the work without the earlier conversation:\n"
         "- the user's goals, requirements and constraints, in their own terms;\n"
         "- the files read, created or changed, with paths and what matters in each;\n"
         "- the commands run and what their results showed;\n"
         "- the decisions taken and the approaches tried and rejected, with the reason;\n"
         "- bugs found and whether they are fixed;\n"
         "- what remains to do next, in order;\n"
         "- where to reload anything needed again (paths, line ranges, commands).\n"
         "State only what the conversation shows; invent nothing. Do not paste file contents or "
         "long outputs: point to them. Do not call tools, do not use thinking tags or DSML. Stop "
         "after the summary.";
}

std::string summary_opening() {
  return "\n\n[ds4-agent compacted the earlier conversation to save context. The summary of the "
         "task state written at that point follows.]\n";
}

std::string summary_closing() {
  return "\n[End of the compacted summary. The most recent turns follow verbatim.]";
}

std::string clean_summary(std::string_view raw) {
  raw = base::trim_end(raw);
  if (!raw.empty() && raw.back() == '<') raw.remove_suffix(1);
  return std::string(base::trim(raw));
}

size_t tail_start(std::span<const TokenId> transcript, size_t system_len, size_t bottom, int ctx,
                  TokenId user) {
  bottom = std::min(bottom, transcript.size());
  const size_t window = static_cast<size_t>(std::min(std::max(ctx, 0) / 10, kTailMaxTokens));
  size_t at = std::max(system_len, bottom > window ? bottom - window : 0);
  for (; at < bottom; ++at) {
    if (transcript[at] == user) return at;
  }
  return bottom;
}

}  // namespace ds4::agent
