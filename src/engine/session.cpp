// src/engine/session.cpp: sync / append / eval / rewind / logits / sampling / snapshots.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/byte_buffer.h"
#include "base/check.h"
#include "base/read_file.h"
#include "engine/pick.h"
#include "engine/session_impl.h"
#include "kv/snapshot.h"

namespace ds4 {

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() {
  if (!impl_) return;
  impl_->engine->backend->drop_sequence(impl_->seq);
  if (impl_->mtp.seq >= 0) impl_->engine->backend->drop_sequence(impl_->mtp.seq);
  if (impl_->engine->tail) impl_->engine->tail->release(impl_->tail_session);
}

int Session::n_ctx() const { return impl_->options.n_ctx; }
int Session::n_tokens() const { return static_cast<int>(impl_->tokens.size()); }
std::span<const TokenId> Session::tokens() const { return impl_->tokens; }
std::span<const float> Session::logits() const { return impl_->logits.host(); }
uint64_t Session::state_bytes() const {
  return model::sequence_layout(impl_->engine->shape, impl_->options.n_ctx).bytes();
}

void Session::Impl::reset() {
  engine->backend->reset_sequence(seq);
  if (mtp.seq >= 0) {
    engine->backend->reset_sequence(mtp.seq);
    mtp.live = true;
    mtp.has_pending = false;
    mtp.fresh_from = 0;
  }
  tokens.clear();
  logits.clear();
  tail_fresh = true;
}

// Tokens must be valid ids and, after the first `keep` live tokens, fit below the context.
Status Session::Impl::check_tokens(std::span<const TokenId> t, size_t keep) const {
  const int n_vocab = engine->shape.n_vocab;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] < 0 || t[i] >= n_vocab) {
      return Status::invalid_argument("token %zu has id %d, outside the vocabulary [0, %d)", i,
                                      t[i], n_vocab);
    }
  }
  if (keep + t.size() >= static_cast<size_t>(options.n_ctx)) {
    return Status::out_of_range("%zu tokens do not fit a context of %d (at most %d)",
                                keep + t.size(), options.n_ctx, options.n_ctx - 1);
  }
  return Status::ok();
}

Result<EvalStats> Session::Impl::append(std::span<const TokenId> t,
                                        std::vector<float>* all_logits) {
  if (!engine->whole_model() && engine->gives_logits()) {
    if (all_logits != nullptr) {
      return Status::unimplemented("per-token logits are not gathered from a layer tail");
    }
    return append_through_tail(t);
  }
  DS4_TRY(whole_model());
  DS4_TRY(check_tokens(t, tokens.size()));
  EvalStats stats;
  stats.reused = static_cast<int>(tokens.size());
  if (t.empty()) return stats;
  const int n_vocab = engine->shape.n_vocab;
  if (all_logits != nullptr) all_logits->assign(t.size() * size_t(n_vocab), 0.0f);
  const int chunk = options.prefill_chunk;
  std::vector<backend::RowTag> rows;
  std::vector<int> want;
  for (size_t begin = 0; begin < t.size(); begin += chunk) {
    const size_t end = std::min(t.size(), begin + chunk);
    rows.clear();
    want.clear();
    for (size_t i = begin; i < end; ++i) {
      rows.push_back(tag(static_cast<int32_t>(tokens.size()), t[i]));
      tokens.push_back(t[i]);
      if (all_logits != nullptr || i + 1 == t.size()) want.push_back(static_cast<int>(i - begin));
    }
    const backend::Act out =
        want.empty() ? backend::Act{} : engine->logits_view(static_cast<int64_t>(want.size()));
    const auto unit = engine->power.start();
    engine->forward->run(rows, want, out);
    mtp_advance(static_cast<int>(tokens.size() - rows.size()), static_cast<int>(rows.size()));
    if (all_logits != nullptr) engine->backend->download(out, all_logits->data() + begin * n_vocab);
    if (end == t.size()) logits.take(backend::Act{out.row(out.rows - 1), 1, n_vocab});
    engine->pace(unit);
  }
  stats.evaluated = static_cast<int>(t.size());
  return stats;
}

Result<EvalStats> Session::Impl::append_through_tail(std::span<const TokenId> t) {
  DS4_TRY(check_tokens(t, tokens.size()));
  EvalStats stats;
  stats.reused = static_cast<int>(tokens.size());
  if (t.empty()) return stats;
  LayerTail& tail = *engine->tail;
  std::vector<TokenId> replay;
  if (!tail_fresh && !tail.holds(tail_session, tokens.size())) {
    // The tail lost this timeline (a worker restarted, the route changed): the whole transcript
    // is evaluated again from position 0, the local slice included.
    replay = tokens;
    replay.insert(replay.end(), t.begin(), t.end());
    reset();
    t = replay;
    stats.reused = 0;
  }
  const size_t chunk = static_cast<size_t>(options.prefill_chunk);
  const int window = std::max(1, tail.window());
  int in_flight = 0;
  Status failed = Status::ok();
  for (size_t begin = 0; begin < t.size() && failed.is_ok(); begin += chunk) {
    const std::span<const TokenId> span = t.subspan(begin, std::min(chunk, t.size() - begin));
    const bool last = begin + span.size() == t.size();
    Result<std::vector<float>> hidden = append_slice(span, {});
    failed =
        hidden.is_ok() ? tail.send(tail_session, span, *hidden, tail_fresh, last) : hidden.status();
    if (!failed.is_ok()) break;
    tail_fresh = false;
    // The local slice computes the next chunk while the tail's stages work on this one.
    if (++in_flight == window && !last) {
      --in_flight;
      if (auto r = tail.receive(tail_session); !r.is_ok()) failed = r.status();
    }
  }
  // The spans still in flight drain before control returns, the last one with the logits.
  while (in_flight > 0 && failed.is_ok()) {
    --in_flight;
    Result<std::vector<float>> r = tail.receive(tail_session);
    if (!r.is_ok()) {
      failed = r.status();
    } else if (in_flight == 0) {
      logits.assign(std::move(r).value());
    }
  }
  if (!failed.is_ok()) {
    // The local slice may hold spans the tail does not: both start again from nothing, so that
    // the next sync evaluates the whole prefix (and replays it to the tail with a reset).
    reset();
    return failed;
  }
  stats.evaluated = static_cast<int>(t.size());
  return stats;
}

Status Session::Impl::whole_model() const {
  if (engine->whole_model()) return Status::ok();
  return Status::invalid_argument(
      "this engine computes layers %d..%d only: evaluate with append_slice", engine->range.begin,
      engine->range.end - 1);
}

Result<std::vector<float>> Session::append_slice(std::span<const TokenId> t,
                                                 std::span<const float> hidden_in) {
  return impl_->append_slice(t, hidden_in);
}

Result<std::vector<float>> Session::Impl::append_slice(std::span<const TokenId> t,
                                                       std::span<const float> hidden_in) {
  Engine::Impl& e = *engine;
  const model::LayerRange& range = e.range;
  const size_t width = static_cast<size_t>(e.shape.n_hc) * e.shape.n_embd;
  DS4_TRY(check_tokens(t, tokens.size()));
  if (range.begin == 0 && !hidden_in.empty()) {
    return Status::invalid_argument("layers from 0 embed their tokens: no hidden state goes in");
  }
  if (range.begin > 0 && hidden_in.size() != t.size() * width) {
    return Status::invalid_argument("the hidden state of %zu tokens is %zu floats, not %zu",
                                    t.size(), t.size() * width, hidden_in.size());
  }
  std::vector<float> out(range.head ? 0 : t.size() * width);
  if (t.empty()) return out;
  const size_t chunk = static_cast<size_t>(options.prefill_chunk);
  std::vector<backend::RowTag> rows;
  for (size_t begin = 0; begin < t.size(); begin += chunk) {
    const size_t end = std::min(t.size(), begin + chunk);
    rows.clear();
    for (size_t i = begin; i < end; ++i) {
      rows.push_back(tag(static_cast<int32_t>(tokens.size()), t[i]));
      tokens.push_back(t[i]);
    }
    const bool last = end == t.size();
    const int want_row = static_cast<int>(end - begin) - 1;
    std::span<const int> want =
        range.head && last ? std::span<const int>(&want_row, 1) : std::span<const int>();
    const backend::Act head_out = want.empty() ? backend::Act{} : e.logits_view(1);
    const auto unit = e.power.start();
    e.forward->run_range(rows, range, range.begin > 0 ? hidden_in.data() + begin * width : nullptr,
                         want, head_out, range.head ? nullptr : out.data() + begin * width);
    if (!want.empty()) {
      logits.take(head_out);
      const std::span<const float> host = logits.host();
      out.assign(host.begin(), host.end());
    }
    e.pace(unit);
  }
  return out;
}

Result<EvalStats> Session::append(std::span<const TokenId> tokens, std::vector<float>* all_logits) {
  return impl_->append(tokens, all_logits);
}

Status Session::eval(TokenId token) {
  DS4_TRY(impl_->append(std::span<const TokenId>(&token, 1), nullptr).status());
  return Status::ok();
}

Result<EvalStats> Session::sync(std::span<const TokenId> prefix) {
  Impl& s = *impl_;
  if (prefix.empty()) return Status::invalid_argument("sync needs at least one token");
  DS4_TRY(s.check_tokens(prefix, 0));
  size_t common = 0;
  while (common < s.tokens.size() && common < prefix.size() && s.tokens[common] == prefix[common]) {
    ++common;
  }
  if (common == s.tokens.size()) return s.append(prefix.subspan(common), nullptr);
  // The live state holds tokens the new prefix does not: the CPU state cannot drop them (the
  // window and the compressor frontier forget old rows), so rebuild from position 0.
  s.reset();
  return s.append(prefix, nullptr);
}

Status Session::rewind(int n_tokens) {
  Impl& s = *impl_;
  if (n_tokens < 0 || n_tokens > this->n_tokens()) {
    return Status::out_of_range("cannot rewind to %d tokens: the session holds %d", n_tokens,
                                this->n_tokens());
  }
  if (n_tokens == this->n_tokens()) return Status::ok();
  std::vector<TokenId> keep(s.tokens.begin(), s.tokens.begin() + n_tokens);
  s.reset();
  DS4_TRY(s.append(keep, nullptr).status());
  return Status::ok();
}

std::vector<TokenLogprob> Session::top_logprobs(int k) const {
  if (impl_->logits.empty()) return {};
  return ds4::top_logprobs(impl_->logits.host(), k);
}

TokenId Session::sample(const SamplingParams& params, Rng& rng) const {
  PickEntry e{.session = this, .params = params, .rng = &rng};
  const Session::Impl* const self = impl_.get();
  pick_tokens(*self->engine, std::span(&self, 1), std::span(&e, 1), {});
  return e.token;
}

uint64_t Session::save_bytes() const {
  const Impl& s = *impl_;
  if (s.tokens.empty()) return 0;
  return kv::snapshot_bytes(s.engine->shape, static_cast<uint32_t>(s.options.n_ctx),
                            static_cast<uint32_t>(s.tokens.size()));
}

Result<std::vector<uint8_t>> Session::save() const {
  // Huge pages advised before the first touch, as the appending payload before save_to had them
  // (512x fewer page faults where THP is on); the zero fill of resize() stays, save_to's callers
  // reuse their memory instead.
  const auto n = static_cast<size_t>(save_bytes());
  std::vector<uint8_t> out;
  out.reserve(n);
  base::advise_huge_pages(out.data(), out.capacity());
  out.resize(n);
  DS4_TRY(save_to(out));
  return out;
}

Status Session::save_to(std::span<uint8_t> out, const std::function<void(size_t)>& ready) const {
  const Impl& s = *impl_;
  if (!s.engine->whole_model() && !s.engine->gives_logits()) {
    return Status::invalid_argument(
        "a session of layers %d..%d alone has no whole snapshot: save_layers() gives its shard",
        s.engine->range.begin, s.engine->range.end - 1);
  }
  if (s.tokens.empty()) return Status::invalid_argument("an empty session has nothing to save");
  if (out.size() != save_bytes()) {
    return Status::invalid_argument("a payload of %zu bytes for a snapshot of %llu", out.size(),
                                    static_cast<unsigned long long>(save_bytes()));
  }
  if (s.engine->whole_model()) {
    // Straight into the payload: the head here, the backend's layers right after it.
    std::vector<uint8_t> head;
    kv::append_snapshot_head(&head, s.engine->shape, static_cast<uint32_t>(s.options.n_ctx),
                             static_cast<uint32_t>(s.options.prefill_chunk),
                             std::span<const int32_t>(s.tokens.data(), s.tokens.size()),
                             s.logits.host());
    DS4_CHECK(head.size() <= out.size());
    std::memcpy(out.data(), head.data(), head.size());
    if (ready) ready(head.size());
    const size_t at = head.size();
    return s.engine->backend->export_sequence_into(s.seq, out.subspan(at), [&](size_t n) {
      if (ready) ready(at + n);
    });
  }
  kv::Snapshot snap;
  snap.n_ctx = static_cast<uint32_t>(s.options.n_ctx);
  snap.prefill_chunk = static_cast<uint32_t>(s.options.prefill_chunk);
  snap.tokens.assign(s.tokens.begin(), s.tokens.end());
  const std::span<const float> logits = s.logits.host();
  snap.logits.assign(logits.begin(), logits.end());
  // A distributed engine's payload: its own layers, and the tail's gathered from the workers.
  DS4_ASSIGN_OR_RETURN(snap.layers, s.engine->backend->export_sequence(s.seq));
  DS4_TRY(s.gather_tail_layers(&snap));
  const std::vector<uint8_t> bytes = kv::encode_snapshot(s.engine->shape, snap);
  DS4_CHECK(bytes.size() == out.size());
  std::memcpy(out.data(), bytes.data(), bytes.size());
  if (ready) ready(out.size());
  return Status::ok();
}

// The tail's layers of the session, shard by shard, into `snap` (whose local layers are set).
Status Session::Impl::gather_tail_layers(kv::Snapshot* snap) const {
  const int n_layer = engine->shape.n_layer;
  if (tail_fresh || !engine->tail->holds(tail_session, tokens.size())) {
    return Status::unavailable(
        "the workers no longer hold this session (a worker restarted): evaluate it again first");
  }
  DS4_ASSIGN_OR_RETURN(std::vector<std::vector<uint8_t>> shards,
                       engine->tail->export_layers(tail_session, tokens.size()));
  std::vector<bool> have(static_cast<size_t>(n_layer), false);
  for (int il = engine->range.begin; il < engine->range.end; ++il) have[il] = true;
  const kv::LoadTarget target{snap->n_ctx, snap->prefill_chunk};
  for (const std::vector<uint8_t>& bytes : shards) {
    DS4_ASSIGN_OR_RETURN(kv::Shard shard, kv::decode_shard(bytes, engine->shape, target));
    if (shard.n_tokens != tokens.size() || shard.n_ctx != snap->n_ctx) {
      return Status::invalid_file("a worker's state holds %u tokens at context %u, not %zu at %u",
                                  shard.n_tokens, shard.n_ctx, tokens.size(), snap->n_ctx);
    }
    for (uint32_t il = shard.first; il <= shard.last; ++il) {
      if (have[il]) return Status::invalid_file("layer %u came twice in a gathered snapshot", il);
      have[il] = true;
      snap->layers[il] = std::move(shard.layers[il - shard.first]);
    }
  }
  for (int il = 0; il < n_layer; ++il) {
    if (!have[il]) return Status::invalid_file("no worker sent the state of layer %d", il);
  }
  return Status::ok();
}

Status Session::load(std::span<const uint8_t> payload) {
  Impl& s = *impl_;
  if (!s.engine->whole_model() && !s.engine->gives_logits()) {
    return Status::invalid_argument(
        "a session of layers %d..%d alone takes a layer shard (load_layers), not a snapshot",
        s.engine->range.begin, s.engine->range.end - 1);
  }
  kv::LoadTarget target;
  target.n_ctx = static_cast<uint32_t>(s.options.n_ctx);
  target.prefill_chunk = static_cast<uint32_t>(s.options.prefill_chunk);
  // Read where the payload holds it: the backend copies the layers in, nothing in between.
  DS4_ASSIGN_OR_RETURN(kv::SnapshotView snap, kv::view_snapshot(payload, s.engine->shape, target));
  DS4_TRY(s.engine->backend->import_sequence_view(s.seq, snap.layers));
  // The MTP block's window is not in a snapshot: it starts again after the loaded context.
  s.mtp.live = false;
  if (!s.engine->whole_model()) {
    // The later layers go to the tail's processes, a shard each.
    const Status st =
        s.engine->tail->import_layers(s.tail_session, snap.tokens, [&](int first, int last) {
          kv::Shard shard{.first = static_cast<uint32_t>(first),
                          .last = static_cast<uint32_t>(last),
                          .n_tokens = static_cast<uint32_t>(snap.tokens.size()),
                          .n_ctx = snap.n_ctx,
                          .prefill_chunk = snap.prefill_chunk};
          for (int il = first; il <= last; ++il)
            shard.layers.push_back(backend::to_state(snap.layers[il]));
          return kv::encode_shard(s.engine->shape, shard);
        });
    if (!st.is_ok()) {
      s.reset();  // the local layers hold the snapshot, the tail does not
      return st;
    }
    s.tail_fresh = false;
  }
  s.tokens.assign(snap.tokens.begin(), snap.tokens.end());
  s.logits.assign(std::move(snap.logits));
  return Status::ok();
}

Result<std::vector<uint8_t>> Session::save_layers() const {
  const Impl& s = *impl_;
  if (s.tokens.empty()) return Status::invalid_argument("an empty session has nothing to save");
  DS4_ASSIGN_OR_RETURN(std::vector<backend::LayerState> all,
                       s.engine->backend->export_sequence(s.seq));
  kv::Shard shard{.first = static_cast<uint32_t>(s.engine->range.begin),
                  .last = static_cast<uint32_t>(s.engine->range.end - 1),
                  .n_tokens = static_cast<uint32_t>(s.tokens.size()),
                  .n_ctx = static_cast<uint32_t>(s.options.n_ctx),
                  .prefill_chunk = static_cast<uint32_t>(s.options.prefill_chunk)};
  for (uint32_t il = shard.first; il <= shard.last; ++il)
    shard.layers.push_back(std::move(all[il]));
  return kv::encode_shard(s.engine->shape, shard);
}

Status Session::load_layers(std::span<const uint8_t> bytes, std::span<const TokenId> tokens) {
  Impl& s = *impl_;
  const kv::LoadTarget target{static_cast<uint32_t>(s.options.n_ctx),
                              static_cast<uint32_t>(s.options.prefill_chunk)};
  DS4_ASSIGN_OR_RETURN(kv::Shard shard, kv::decode_shard(bytes, s.engine->shape, target));
  if (static_cast<int>(shard.first) != s.engine->range.begin ||
      static_cast<int>(shard.last) != s.engine->range.end - 1) {
    return Status::invalid_argument("a shard of layers %u:%u for a session of layers %d:%d",
                                    shard.first, shard.last, s.engine->range.begin,
                                    s.engine->range.end - 1);
  }
  if (shard.n_tokens != tokens.size()) {
    return Status::invalid_argument("a shard of %u tokens with a transcript of %zu", shard.n_tokens,
                                    tokens.size());
  }
  DS4_TRY(s.check_tokens(tokens, 0));
  // The other layers' entries of a fresh sequence: the import replaces every layer.
  s.reset();
  DS4_ASSIGN_OR_RETURN(std::vector<backend::LayerState> all,
                       s.engine->backend->export_sequence(s.seq));
  for (uint32_t il = shard.first; il <= shard.last; ++il) {
    all[il] = std::move(shard.layers[il - shard.first]);
  }
  DS4_TRY(s.engine->backend->import_sequence(s.seq, all));
  s.tokens.assign(tokens.begin(), tokens.end());
  return Status::ok();
}

Status Session::save_file(const std::string& path) const {
  DS4_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, save());
  return base::write_file(path, bytes.data(), bytes.size());
}

Status Session::load_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    return Status::io_error("cannot open '%s': %s", path.c_str(), std::strerror(errno));
  // The largest payload this session could have written bounds what is worth reading.
  const Impl& s = *impl_;
  const uint64_t limit = 4096 + 4ull * s.options.n_ctx + 4ull * s.engine->shape.n_vocab +
                         8ull * s.engine->shape.n_layer + state_bytes();
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    if (bytes.size() + n > limit) {
      std::fclose(f);
      return Status::invalid_argument("'%s' is larger than any snapshot of this session",
                                      path.c_str());
    }
    bytes.insert(bytes.end(), buf, buf + n);
  }
  const bool err = std::ferror(f) != 0;
  std::fclose(f);
  if (err) return Status::io_error("cannot read '%s'", path.c_str());
  return load(bytes);
}

}  // namespace ds4
