// src/agent/compaction.h: what compaction (features.md §5.9) decides without a model.
// Owns: the soft trigger, the internal request that asks the model for a task-state summary, the
// text framing the summary in the rebuilt transcript, the clean-up of the summary's text, and
// where the verbatim tail of the old transcript starts.
// Does not own: generating the summary or re-evaluating the rebuilt transcript (turn_loop.h).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "ds4/types.h"

namespace ds4::agent {

// Soft trigger: compact once this fraction of the context is used, or once no more than
// min(kCompactFreeTokens, ctx / 4) tokens are free.
inline constexpr double kCompactUsedFraction = 0.85;
inline constexpr int kCompactFreeTokens = 8192;
// The summary is decoded greedily up to this many tokens.
inline constexpr int kSummaryMaxTokens = 4096;
// A summary needs at least this much room to be worth generating.
inline constexpr int kSummaryMinTokens = 64;
// The verbatim tail kept after the summary: the last min(ctx / 10, kTailMaxTokens) tokens before
// the compaction began, from the first user turn inside that window.
inline constexpr int kTailMaxTokens = 50000;

bool needs_compaction(int used, int ctx);

// The internal user message that asks for the summary (our own wording of §5.9's list).
std::string_view compaction_request();
// The plain text that opens and closes the summary in the rebuilt transcript.
std::string summary_opening();
std::string summary_closing();
// The summary's text as the model wrote it, made safe to splice: surrounding blanks trimmed and a
// dangling '<' (the start of a tag the model did not finish) dropped.
std::string clean_summary(std::string_view raw);

// Index in `transcript` where the kept tail begins: the first `user` token at or after
// max(system_len, bottom - min(ctx / 10, kTailMaxTokens)) and before `bottom`; `bottom` when the
// window holds no user turn (nothing is kept).
size_t tail_start(std::span<const TokenId> transcript, size_t system_len, size_t bottom, int ctx,
                  TokenId user);

}  // namespace ds4::agent
