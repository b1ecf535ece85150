// src/serve/scheduler_disk.cpp: the scheduler's side of the disk KV cache (features.md §3.3,
// §3.5): the evict save and the load on a miss, the cold and continued save points, and the
// shutdown saves. Saving copies the session's payload here (the scheduler thread owns the
// session) and hands it to the disk writer; nothing here waits on a disk write.
#include <chrono>
#include <cstdio>
#include <string_view>

#include "kv/snapshot.h"
#include "serve/scheduler.h"
#include "serve/scheduler_parts.h"

namespace ds4::serve {
namespace {

const char* key_name(uint8_t flags) {
  if ((flags & kv::kKvcResponsesTextFlag) != 0) return "responses-visible";
  if ((flags & kv::kKvcThinkingTextFlag) != 0) return "thinking-visible";
  return "token-text";
}

}  // namespace

PromptPlan Scheduler::disk_miss(Slot& slot, PromptPlan plan, const Steering& want) {
  Active& a = *slot.active;
  Session& s = *slot.session;
  const CachePolicyOptions& policy = options_.cache;
  // The live checkpoint is about to be replaced: keep it on disk unless it is there already.
  if (static_cast<size_t>(s.n_tokens()) >= policy.min_tokens &&
      static_cast<size_t>(s.n_tokens()) != slot.saved_at) {
    save_checkpoint(slot, kv::SaveReason::kEvict);
  }
  slot.saved_at = 0;
  slot.last_stored = 0;
  slot.cold = 0;
  // The session takes the request's scales before a file may be loaded into it; the files hold
  // states computed with the engine's scales, so a request with its own neither loads nor saves.
  if (Status st = steer_session(s, want); !st.is_ok()) {
    disk_->log("kv cache: cannot steer the session: " + st.to_string());
    return plan;
  }
  if (want != engine_->options().steering) return plan;
  const std::string_view rendered = a.request.rendered;
  if (!rendered.empty()) {
    const auto t0 = std::chrono::steady_clock::now();
    if (std::optional<DiskHit> hit = disk_->lookup(rendered, visible_keys(a.request.protocol))) {
      const uint32_t n = hit->entry.header.tokens;
      // The payload must hold the header's token count (§3.5 step 4). Checked before the session
      // takes it, and again after: a session left holding a rejected file's tokens would reuse
      // them, and count them as cached, since they are a prefix of the prompt.
      auto held = kv::snapshot_tokens(hit->payload);
      Status st = !held.is_ok() ? held.status()
                  : *held != n
                      ? Status::invalid_file("it holds %u tokens, its header says %u", *held, n)
                      : s.load(hit->payload);
      if (st.is_ok() && static_cast<uint32_t>(s.n_tokens()) != n) {
        st = Status::invalid_file("it holds %d tokens, its header says %u", s.n_tokens(), n);
        if (Status r = s.rewind(0); !r.is_ok()) {
          disk_->log("kv cache: cannot empty the session: " + r.to_string());
        }
      }
      if (!st.is_ok()) {
        disk_->reject(*hit, st.message());
      } else {
        PromptPlan p;
        const auto live = s.tokens();
        p.tokens.assign(live.begin(), live.end());
        append_rendered_tokens(*tok_, a.request, hit->entry.text_bytes, &p.tokens);
        p.source = CacheSource::kDisk;
        p.reusable = live.size();
        // A checkpoint longer than the cold window now belongs to the live session, which saves
        // it again when it is evicted or the server stops (§3.5 step 7).
        const bool consume = policy.cold_max_tokens != 0 && n > policy.cold_max_tokens;
        disk_->loaded(*hit, consume);  // also restores its tool-id map
        slot.last_stored = n;
        slot.saved_at = consume ? 0 : n;
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        char line[200];
        std::snprintf(line, sizeof line,
                      "kv cache hit text tokens=%u text=%u quant=%u key=%s load=%.1f ms%s file=", n,
                      hit->entry.text_bytes, hit->entry.header.quant_bits,
                      key_name(hit->entry.header.flags), ms, consume ? " consumed" : "");
        disk_->log(line + hit->entry.name);
        return p;
      }
    }
  }
  slot.cold =
      cold_boundary(plan.tokens, tok_->special_ids().user, tok_->special_ids().assistant, policy);
  return plan;
}

size_t Scheduler::chunk_stop(const Slot& slot, size_t from, size_t to) const {
  return next_stop(from, to, slot.cold, slot.last_stored, options_.cache);
}

void Scheduler::after_prefill_chunk(Slot& slot) {
  const size_t n = static_cast<size_t>(slot.session->n_tokens());
  if (slot.cold != 0 && n == slot.cold) {
    slot.cold = 0;
    save_checkpoint(slot, kv::SaveReason::kCold);
  } else if (continued_due(n, slot.last_stored, options_.cache)) {
    save_checkpoint(slot, kv::SaveReason::kContinued);
  }
}

void Scheduler::before_decode(Slot& slot) {
  const size_t n = static_cast<size_t>(slot.session->n_tokens());
  if (!continued_due(n, slot.last_stored, options_.cache)) return;
  // Not inside or after a tool-call block: that checkpoint would end mid-protocol (§3.3).
  const Active& a = *slot.active;
  if (a.request.output.tools && a.gen.tool_block_opened()) return;
  save_checkpoint(slot, kv::SaveReason::kContinued);
}

void Scheduler::save_checkpoint(Slot& slot, kv::SaveReason reason) {
  const Session& s = *slot.session;
  if (s.steering() != engine_->options().steering) return;  // disk_miss: other scales stay off disk
  const size_t n = static_cast<size_t>(s.n_tokens());
  slot.saved_at = n;
  if (n > slot.last_stored) slot.last_stored = n;
  // The one copy the scheduler thread makes (only the session's owner may read its state); the
  // writer decodes the tokens into the cache text and does all the file I/O.
  base::ByteBuffer payload = disk_->payload_buffer(static_cast<size_t>(s.save_bytes()));
  if (Status st = s.save_to(payload.span()); !st.is_ok()) {
    disk_->log("kv cache: cannot copy the session out: " + st.to_string());
    return;
  }
  SaveJob job{.reason = reason, .tokens = static_cast<uint32_t>(n), .payload = std::move(payload)};
  const bool bound = (reason == kv::SaveReason::kEvict || reason == kv::SaveReason::kShutdown) &&
                     !slot.visible.empty() && slot.visible_at == n;
  if (bound) {
    // §3.3: the key is the transcript the client will send back, not the token text.
    job.text = slot.visible;
    job.key_flag = slot.visible_flag;
  } else {
    const auto live = s.tokens();
    job.token_ids.assign(live.begin(), live.end());
  }
  disk_->save(std::move(job));
}

}  // namespace ds4::serve
