// src/serve/disk_cache.cpp: the locked KVC store and the disk writer thread (see disk_cache.h).
#include "serve/disk_cache.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace ds4::serve {
namespace {

const char* reason_name(kv::SaveReason r) {
  switch (r) {
    case kv::SaveReason::kCold: return "cold";
    case kv::SaveReason::kContinued: return "continued";
    case kv::SaveReason::kEvict: return "evict";
    case kv::SaveReason::kShutdown: return "shutdown";
    case kv::SaveReason::kAgentSession: return "agent-session";  // never the server's own
    case kv::SaveReason::kAgentSystem: return "agent-system";
    case kv::SaveReason::kUnknown: break;
  }
  return "unknown";
}

uint64_t unix_now() { return static_cast<uint64_t>(std::time(nullptr)); }

}  // namespace

Result<std::unique_ptr<DiskCache>> DiskCache::open(DiskCacheOptions options, ReplayMap* replay,
                                                   const Tokenizer& tok) {
  if (options.query.quant_bits != 2 && options.query.quant_bits != 4) {
    return Status::invalid_argument(
        "the disk KV cache stores 2- or 4-bit routed-expert checkpoints; this model's experts "
        "have %d bits",
        static_cast<int>(options.query.quant_bits));
  }
  if (!options.log) {
    options.log = [](const std::string& line) {
      std::fprintf(stderr, "ds4-server: %s\n", line.c_str());
    };
  }
  kv::KvcStoreOptions so{.dir = options.dir,
                         .budget_bytes = options.budget_bytes,
                         .limits = {.max_tool_ids = options.max_tool_ids},
                         .strict_quant = options.query.strict_quant,
                         .now = unix_now,
                         .log = options.log};
  DS4_ASSIGN_OR_RETURN(kv::KvcStore store, kv::KvcStore::open(std::move(so)));
  std::unique_ptr<DiskCache> c(new DiskCache(std::move(options), replay, tok, std::move(store)));
  c->thread_ = std::thread([p = c.get()] { p->run(); });
  return c;
}

DiskCache::DiskCache(DiskCacheOptions options, ReplayMap* replay, const Tokenizer& tok,
                     kv::KvcStore store)
    : o_(std::move(options)), replay_(replay), tok_(&tok), store_(std::move(store)) {}

DiskCache::~DiskCache() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DiskCache::log(const std::string& line) const { o_.log(line); }

bool DiskCache::save(SaveJob job) {
  if (job.tokens < o_.query.min_tokens || job.payload.size() == 0) return false;
  {
    std::lock_guard lock(mu_);
    const bool fits =
        queued_saves_ == 0 || (queued_saves_ < o_.max_pending &&
                               queued_bytes_ + job.payload.size() <= o_.max_pending_bytes);
    if (!stop_ && fits) {
      queued_bytes_ += job.payload.size();
      ++queued_saves_;
      queue_.push_back(Job{.kind = Job::Kind::kSave, .save = std::move(job), .name = {}});
      cv_.notify_all();
      return true;
    }
    ++dropped_;
    keep_spare(&job.payload);
  }
  log("kv cache: not saving a " + std::string(reason_name(job.reason)) + " checkpoint of " +
      std::to_string(job.tokens) + " tokens: the disk writer is behind");
  return false;
}

base::ByteBuffer DiskCache::payload_buffer(size_t bytes) {
  {
    std::lock_guard lock(mu_);
    if (spare_.resize_within(bytes)) return std::move(spare_);
  }
  return base::ByteBuffer(bytes);
}

void DiskCache::keep_spare(base::ByteBuffer* b) {
  if (b->capacity() >= spare_.capacity() && b->capacity() <= o_.max_pending_bytes) {
    spare_ = std::move(*b);
  }
}

void DiskCache::flush() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && !writing_; });
}

void DiskCache::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything is written
    Job job = std::move(queue_.front());
    queue_.pop_front();
    if (job.kind == Job::Kind::kSave) {
      queued_bytes_ -= job.save.payload.size();
      --queued_saves_;
    }
    writing_ = true;
    lock.unlock();
    if (job.kind == Job::Kind::kSave) {
      write(job.save);
    } else {
      bookkeep(job);
    }
    lock.lock();
    keep_spare(&job.save.payload);
    writing_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

void DiskCache::push(Job job) {
  std::lock_guard lock(mu_);
  queue_.push_back(std::move(job));
  cv_.notify_all();
}

void DiskCache::bookkeep(const Job& job) {
  std::lock_guard lock(store_mu_);
  if (job.kind == Job::Kind::kRemove) {
    store_.remove(job.name);
    return;
  }
  Status st = store_.touch(job.name);
  if (!st.is_ok()) log("kv cache: " + st.to_string());
}

void DiskCache::write(SaveJob& job) {
  const auto t0 = std::chrono::steady_clock::now();
  if (job.text.empty()) {
    job.text = tok_->decode(job.token_ids);
    job.key_flag = 0;
  }
  std::vector<kv::ToolMapEntry> map;
  if (replay_) {
    for (auto& [id, block] : replay_->entries_in(job.text)) {
      map.push_back({.id = std::move(id), .dsml = std::move(block)});
    }
  }
  kv::KvcHeader h{.quant_bits = o_.query.quant_bits,
                  .reason = job.reason,
                  .flags = job.key_flag,
                  .model = o_.query.model,
                  .tokens = job.tokens,
                  .n_ctx = o_.query.n_ctx};
  Status st;
  uint64_t file_bytes = 0;
  // The encoding, the write and its fsync happen outside the lock: lookups and tool-id restores go
  // on meanwhile. Only the eviction (before the write: the budget holds at every moment), the
  // rename and the index update hold it.
  auto prepared = store_.prepare(h, job.text, job.payload.span(), map);
  if (!prepared.is_ok()) {
    st = prepared.status();
  } else {
    {
      std::lock_guard lock(store_mu_);
      st = store_.reserve(*prepared);
    }
    if (st.is_ok()) st = store_.write(*prepared);
    std::lock_guard lock(store_mu_);
    if (st.is_ok()) {
      st = store_.commit(*prepared);
    } else {
      store_.abandon(*prepared);
    }
    file_bytes = prepared->bytes;
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  {
    std::lock_guard lock(mu_);
    (st.is_ok() ? saved_ : failed_) += 1;
  }
  char line[256];
  if (st.is_ok()) {
    std::snprintf(line, sizeof line,
                  "kv cache: saved reason=%s tokens=%u text=%zu tool_ids=%zu bytes=%llu %.1f ms",
                  reason_name(job.reason), job.tokens, job.text.size(), map.size(),
                  static_cast<unsigned long long>(file_bytes), ms);
    log(line);
  } else {
    std::snprintf(line, sizeof line,
                  "kv cache: save failed reason=%s tokens=%u: ", reason_name(job.reason),
                  job.tokens);
    log(line + st.to_string());
  }
}

std::optional<DiskHit> DiskCache::lookup(std::string_view rendered, uint8_t visible_keys) {
  kv::KvcQuery query = o_.query;
  query.visible_keys = visible_keys;
  std::lock_guard lock(store_mu_);
  store_.rescan();  // files another server wrote, files a user removed
  // A damaged file is removed by read(); the next best one is tried (a bounded number of times).
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::optional<kv::KvcEntry> e = store_.find(rendered, query);
    if (!e) return std::nullopt;
    auto read = store_.read(*e, rendered);
    if (!read.is_ok() && read.status().code() == StatusCode::kIoError) {
      log("kv cache: " + read.status().to_string());  // cannot read it now: a cold prefill
      return std::nullopt;
    }
    if (!read.is_ok()) continue;  // removed by read()
    if (!read->view.tool_map_error.empty()) {
      log("kv cache: " + e->name + ": tool-id map: " + read->view.tool_map_error);
    }
    // The header and text as read, which the checksum vouches for (another server may have
    // replaced the file since it was indexed).
    e->header = read->view.header;
    e->text_bytes = static_cast<uint32_t>(read->view.text.size());
    // The payload view stays valid: moving the bytes keeps their buffer.
    return DiskHit{.entry = *e,
                   .file = std::move(read->bytes),
                   .payload = read->view.payload,
                   .tool_map = std::move(read->view.tool_map)};
  }
  return std::nullopt;
}

void DiskCache::remember(std::span<const kv::ToolMapEntry> entries) {
  if (!replay_) return;
  for (const auto& t : entries) replay_->remember(std::span<const std::string>(&t.id, 1), t.dsml);
}

void DiskCache::loaded(const DiskHit& hit, bool consume) {
  remember(hit.tool_map);
  if (consume) {
    std::lock_guard lock(store_mu_);
    store_.forget(hit.entry);
  }
  {
    std::lock_guard lock(mu_);
    ++hits_;
  }
  push(Job{.kind = consume ? Job::Kind::kRemove : Job::Kind::kTouch,
           .save = {},
           .name = hit.entry.name});
}

void DiskCache::reject(const DiskHit& hit, const std::string& why) {
  log("kv cache: removing " + hit.entry.name + ": its payload does not load: " + why);
  {
    std::lock_guard lock(store_mu_);
    store_.forget(hit.entry);
  }
  push(Job{.kind = Job::Kind::kRemove, .save = {}, .name = hit.entry.name});
}

void DiskCache::restore_tool_ids(std::span<const std::string> ids) {
  if (!replay_ || ids.empty()) return;
  std::vector<std::string> wanted;
  for (const auto& id : ids) {
    if (!replay_->find(id)) wanted.push_back(id);
  }
  if (wanted.empty()) return;
  std::vector<kv::ToolMapEntry> found;
  {
    std::lock_guard lock(store_mu_);
    found = store_.tool_map_entries(wanted, o_.query.model);
  }
  remember(found);
}

DiskCacheStats DiskCache::stats() const {
  DiskCacheStats s;
  {
    std::lock_guard lock(mu_);
    s.saved = saved_;
    s.failed = failed_;
    s.dropped = dropped_;
    s.hits = hits_;
  }
  std::lock_guard lock(store_mu_);
  s.files = store_.entries().size();
  s.bytes = store_.bytes_used();
  return s;
}

}  // namespace ds4::serve
