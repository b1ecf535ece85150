// src/serve/scheduler_visible.cpp: the visible-transcript bindings (features.md §1.13 rules 1 and
// 6, §2.7). After a thinking turn the client sends its history back without the reasoning the
// live session holds, so neither the token nor the text prefix rule can reuse that session. When
// such a turn ends normally the slot remembers the transcript the client will send (bind_visible);
// a later request of the same protocol that starts with it reuses the session as it stands
// (plan_visible), and the disk cache keys the session's evict and shutdown saves by it
// (scheduler_disk.cpp).
#include <string_view>

#include "ds4/chat.h"
#include "serve/scheduler.h"
#include "serve/scheduler_parts.h"

namespace ds4::serve {

void Scheduler::bind_visible(Slot& slot, FinishReason reason) {
  slot.visible.clear();
  slot.visible_at = 0;
  const Active& a = *slot.active;
  const Request& r = a.request;
  // §2.7: a Responses turn, or a chat / messages one whose prompt does not keep earlier
  // reasoning (no tools), that reasoned, closed its reasoning and ended normally. The client
  // sends it back without the reasoning, which the template renders (chat/template.cpp) as the
  // prompt without its trailing "<think>", then "</think>" and the answer; where the template
  // keeps earlier reasoning (tools declared; with --chat-template ds4 also a tool call or result
  // in the history: Request::keeps_reasoning) the "<think>" stays and the (empty) reasoning is
  // closed by "</think>".
  const bool keeps = r.output.tools || r.keeps_reasoning;
  const bool responses = r.protocol == Protocol::kResponses;
  if (!r.output.thinking || !(responses || (r.protocol == Protocol::kChat && !keeps))) return;
  if (reason != FinishReason::kStop && reason != FinishReason::kToolCalls) return;
  if (!r.rendered.ends_with(chat::kThinkStart)) return;
  const auto live = slot.session->tokens();
  if (live.size() <= a.prompt.size()) return;
  const std::string out = tok_->decode(live.subspan(a.prompt.size()));
  const size_t end = out.find(chat::kThinkEnd);
  if (end == std::string::npos) return;  // still reasoning: nothing visible to key by
  slot.visible =
      keeps ? r.rendered : r.rendered.substr(0, r.rendered.size() - chat::kThinkStart.size());
  slot.visible.append(out, end);
  slot.visible_at = live.size();
  slot.visible_flag = responses ? kv::kKvcResponsesTextFlag : kv::kKvcThinkingTextFlag;
}

void Scheduler::save_on_shutdown() {
  for (auto& slot : slots_) {
    const size_t n = static_cast<size_t>(slot->session->n_tokens());
    if (n >= options_.cache.min_tokens && n != slot->saved_at) {
      save_checkpoint(*slot, kv::SaveReason::kShutdown);
    }
  }
}

PromptPlan Scheduler::plan_visible(Slot& slot, const Request& r, PromptPlan miss) const {
  const auto live = slot.session->tokens();
  const std::string_view rendered = r.rendered;
  if (slot.visible.empty() || slot.visible_at != live.size() ||
      (visible_keys(r.protocol) & slot.visible_flag) == 0 || !rendered.starts_with(slot.visible)) {
    return miss;
  }
  PromptPlan p;
  p.tokens.assign(live.begin(), live.end());
  append_rendered_tokens(*tok_, r, slot.visible.size(), &p.tokens);
  p.source = CacheSource::kVisible;
  p.reusable = live.size();
  return p;
}

}  // namespace ds4::serve
