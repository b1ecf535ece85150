// src/kv/kvc_store.cpp: the KVC cache directory (see kvc_store.h).
#include "kv/kvc_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>
#include <vector>

#include "base/check.h"
#include "base/fd.h"

namespace ds4::kv {
namespace {

constexpr double kHitHalfLifeSeconds = 6 * 3600.0;  // §3.6: hits halve every 6 hours of disuse

bool is_cache_name(std::string_view n) {
  if (n.size() != 43 || n.substr(40) != ".kv") return false;
  return std::all_of(n.begin(), n.begin() + 40,
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// ".<sha1>.kv.tmp.<pid>" (prepare's temporary name): the writer's pid, or 0 for another name.
pid_t temp_writer(std::string_view n) {
  constexpr std::string_view kTmp = ".tmp.";
  if (n.size() < 1 + 43 + kTmp.size() + 1 || n[0] != '.' || !is_cache_name(n.substr(1, 43)) ||
      n.substr(44, kTmp.size()) != kTmp) {
    return 0;
  }
  const std::string_view digits = n.substr(44 + kTmp.size());
  if (digits.size() > 9 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return 0;
  }
  return static_cast<pid_t>(std::stol(std::string(digits)));
}

// Reads up to `n` bytes from the start of `fd`.
Result<std::vector<uint8_t>> read_prefix(int fd, uint64_t n, const std::string& path) {
  std::vector<uint8_t> out(static_cast<size_t>(n));
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t r = ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::io_error("read '%s': %s", path.c_str(), std::strerror(errno));
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  out.resize(got);
  return out;
}

Status write_all(int fd, std::span<const uint8_t> bytes, const std::string& path) {
  if (base::write_all(fd, {reinterpret_cast<const char*>(bytes.data()), bytes.size()})) {
    return Status::ok();
  }
  return Status::io_error("write '%s': %s", path.c_str(), std::strerror(errno));
}

using base::Fd;

// Reads bytes [begin, end) of fd (file offsets) into out at the same offsets, a read piece at a
// time (short reads completed), handing each piece to `after` (when given) with its offset:
// io_error on a failed read, invalid_file when the file ends early.
using Piece = std::function<void(uint64_t offset, std::span<const uint8_t> piece)>;
Status read_range(int fd, std::span<uint8_t> out, size_t begin, size_t end, const std::string& p,
                  const Piece& after) {
  for (size_t at = begin; at < end;) {
    const size_t want = std::min(KvcStore::kReadPieceBytes, end - at);
    for (size_t got = 0; got < want;) {
      const ssize_t r =
          ::pread(fd, out.data() + at + got, want - got, static_cast<off_t>(at + got));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return Status::io_error("read '%s': %s", p.c_str(), std::strerror(errno));
      if (r == 0) return Status::invalid_file("it was cut short while it was read");
      got += static_cast<size_t>(r);
    }
    if (after) after(at, out.subspan(at, want));
    at += want;
  }
  return Status::ok();
}

// Reads out[begin..] from fd with `threads` threads, each a range of whole read pieces.
Status read_side_by_side(int fd, std::span<uint8_t> out, size_t begin, size_t threads,
                         const std::string& p, const Piece& after) {
  const size_t piece = KvcStore::kReadPieceBytes;
  const size_t per = ((out.size() - begin) / threads + piece - 1) / piece * piece;
  std::vector<Status> status(threads);
  {
    std::vector<std::jthread> readers;
    for (size_t t = 0; t < threads; ++t) {
      readers.emplace_back([&, t] {
        status[t] = read_range(fd, out, std::min(out.size(), begin + t * per),
                               std::min(out.size(), begin + (t + 1) * per), p, after);
      });
    }
  }
  for (Status& s : status) DS4_TRY(std::move(s));
  return Status::ok();
}

}  // namespace

Status write_kvc(int fd, const std::string& path, KvcWriter& w, std::span<const uint8_t> payload,
                 const std::function<void(uint64_t, uint64_t)>& progress, size_t threads,
                 const base::ReadyBytes* ready) {
  const uint64_t total = w.file_bytes();
  uint64_t written = 0;
  return w.stream(
      payload,
      [&](std::span<const uint8_t> bytes) {
        DS4_TRY(write_all(fd, bytes, path));
        written += bytes.size();
        if (progress) progress(written, total);
        return Status::ok();
      },
      threads, ready);
}

namespace {

uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

// A file's modification time in nanoseconds (rescan's test for a rewritten file).
int64_t mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// §3.6 (N): the factor on the score of a continued file that an incoming file continues.
double devaluation(uint32_t hits) {
  const double h = hits;
  return 0.05 + 0.45 * h / (h + 1);
}

// Sets a file's hit count and last use in place: only those header fields, which the checksum
// leaves out, so the rest stays as the file has it (another server may have replaced the file
// since this one indexed it: writing the whole indexed header would break the new file's sum).
Status rewrite_bookkeeping(const std::string& path, uint32_t hits, uint64_t last_used) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (fd.get() < 0) return Status::io_error("open '%s': %s", path.c_str(), std::strerror(errno));
  uint8_t h[4], t[8];
  for (int i = 0; i < 4; ++i) h[i] = static_cast<uint8_t>(hits >> (8 * i));
  for (int i = 0; i < 8; ++i) t[i] = static_cast<uint8_t>(last_used >> (8 * i));
  if (::pwrite(fd.get(), h, sizeof h, kKvcHitsAt) != static_cast<ssize_t>(sizeof h) ||
      ::pwrite(fd.get(), t, sizeof t, kKvcLastUsedAt) != static_cast<ssize_t>(sizeof t))
    return Status::io_error("update '%s': %s", path.c_str(), std::strerror(errno));
  return Status::ok();
}

}  // namespace

std::string sha1_hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha1(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 15]);
  }
  return out;
}

Result<KvcStore> KvcStore::open(KvcStoreOptions options) {
  if (!options.now) {
    options.now = [] {
      return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count());
    };
  }
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec)
    return Status::io_error("cannot create the KV cache directory '%s': %s", options.dir.c_str(),
                            ec.message().c_str());
  std::filesystem::permissions(options.dir, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace, ec);
  KvcStore store(std::move(options));
  store.remove_stale_temps();
  DS4_ASSIGN_OR_RETURN(std::vector<std::string> names, store.list());
  for (const std::string& n : names) store.index(n);
  store.evict_for(0, nullptr);  // a smaller budget than the last run's holds from the start (§3.6)
  return store;
}

void KvcStore::log(const std::string& line) const {
  if (o_.log) o_.log(line);
}

Result<std::vector<std::string>> KvcStore::list() {
  DIR* d = ::opendir(o_.dir.c_str());
  if (d == nullptr)
    return Status::io_error("cannot read '%s': %s", o_.dir.c_str(), std::strerror(errno));
  std::vector<std::string> names;
  foreign_tmp_bytes_ = 0;
  foreign_tmp_files_ = 0;
  while (const dirent* e = ::readdir(d)) {
    if (is_cache_name(e->d_name)) {
      names.emplace_back(e->d_name);
    } else if (const pid_t pid = temp_writer(e->d_name); pid != 0 && pid != ::getpid()) {
      // Another process's save under way (or a stale one, removed at the next open): its bytes
      // are on the disk, so they count against the budget while the file exists.
      struct stat st {};
      if (::stat(path(e->d_name).c_str(), &st) == 0) {
        foreign_tmp_bytes_ += static_cast<uint64_t>(st.st_size);
        ++foreign_tmp_files_;
      }
    }
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

void KvcStore::remove_stale_temps() {
  DIR* d = ::opendir(o_.dir.c_str());
  if (d == nullptr) return;  // list() reports it
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d)) {
    const pid_t pid = temp_writer(e->d_name);
    // A writer that no longer runs (kill -9 during a save) never renames its file. The pid of
    // this process is stale too: no save of this store has started yet.
    if (pid != 0 && (pid == ::getpid() || (::kill(pid, 0) != 0 && errno == ESRCH))) {
      stale.emplace_back(e->d_name);
    }
  }
  ::closedir(d);
  for (const std::string& n : stale) {
    struct stat st {};
    const uint64_t bytes = ::stat(path(n).c_str(), &st) == 0 ? st.st_size : 0;
    if (::unlink(path(n).c_str()) == 0) {
      log("kv cache: removed " + n + " (" + std::to_string(bytes) +
          " bytes), the temporary file of a save that was interrupted");
    }
  }
}

void KvcStore::rescan() {
  auto names = list();
  if (!names.is_ok()) {
    log("kv cache: " + names.status().to_string());
    return;
  }
  const auto listed = [&](const std::string& n) {
    return std::binary_search(names->begin(), names->end(), n);
  };
  std::erase_if(entries_, [&](const KvcEntry& e) { return !listed(e.name); });
  std::erase_if(refused_, [&](const Refused& r) { return !listed(r.name); });
  for (const std::string& n : *names) {
    struct stat st {};
    if (::stat(path(n).c_str(), &st) != 0) continue;
    const int64_t mtime = mtime_ns(st);
    const auto same = [&](uint64_t bytes, int64_t t) {
      return bytes == static_cast<uint64_t>(st.st_size) && t == mtime;
    };
    auto e = std::find_if(entries_.begin(), entries_.end(),
                          [&](const KvcEntry& x) { return x.name == n; });
    if (e != entries_.end() && same(e->file_bytes, e->mtime_ns)) continue;
    auto r = std::find_if(refused_.begin(), refused_.end(),
                          [&](const Refused& x) { return x.name == n; });
    if (r != refused_.end() && same(r->bytes, r->mtime_ns)) continue;
    index(n);  // new, or rewritten by another process
  }
}

void KvcStore::index(const std::string& name) {
  std::erase_if(entries_, [&](const KvcEntry& e) { return e.name == name; });
  std::erase_if(refused_, [&](const Refused& r) { return r.name == name; });
  const std::string p = path(name);
  Fd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
    log("kv cache: skipping " + name + ": " + std::strerror(errno));
    return;
  }
  const int64_t mtime = mtime_ns(st);
  // Remembered so that rescan() does not read (and log) the same refused file again.
  const auto refuse = [&] { refused_.push_back({name, static_cast<uint64_t>(st.st_size), mtime}); };
  auto head = read_prefix(fd.get(), kKvcHeaderBytes + 4, p);
  if (!head.is_ok()) {
    log("kv cache: skipping " + name + ": " + head.status().message());
    return refuse();
  }
  Result<KvcHeader> h = decode_kvc_header(*head);
  if (!h.is_ok() && h.status().code() == StatusCode::kUnimplemented) {
    // A newer build's file (a later version, flag bits naming sections unknown here): it may be
    // sound, and that build may share the directory.
    log("kv cache: skipping " + name + ": " + h.status().message());
    return refuse();
  }
  if (h.is_ok() && (h->flags & kKvcAgentFlag) != 0) {
    // A ds4-agent session file (its name is not the SHA-1 of its text): not a cache file, and
    // not this store's to use, evict or delete.
    log("kv cache: skipping " + name + ": a ds4-agent session file");
    return refuse();
  }
  KvcEntry e;
  std::string bad;
  if (!h.is_ok()) {
    bad = h.status().message();
  } else if (head->size() < kKvcHeaderBytes + 4) {
    bad = "it ends inside its header";
  } else {
    e.name = name;
    e.header = *h;
    e.text_bytes = le32(head->data() + kKvcHeaderBytes);
    e.file_bytes = static_cast<uint64_t>(st.st_size);
    e.mtime_ns = mtime;
    const uint64_t claimed =
        e.header.payload_bytes > e.file_bytes
            ? e.header.payload_bytes
            : kvc_payload_offset(e.text_bytes) + e.header.payload_bytes + kKvcFooterBytes;
    if (claimed > e.file_bytes) {
      bad = "its header claims at least " + std::to_string(claimed) + " bytes, the file holds " +
            std::to_string(e.file_bytes) + " (cut short?)";
    } else {
      // The footer is checked here too: a file cut inside its tool-id map still holds its payload.
      std::vector<uint8_t> footer(kKvcFooterBytes);
      const off_t at = static_cast<off_t>(e.file_bytes - kKvcFooterBytes);
      if (::pread(fd.get(), footer.data(), footer.size(), at) !=
          static_cast<ssize_t>(footer.size())) {
        log("kv cache: skipping " + name + ": cannot read its footer: " + std::strerror(errno));
        return refuse();
      }
      if (auto f = decode_kvc_footer(footer); !f.is_ok()) bad = f.status().message();
    }
  }
  if (!bad.empty()) {
    discard(name, bad);
    if (std::filesystem::exists(p)) refuse();  // not ours to delete: logged once, then left
    return;
  }
  entries_.push_back(std::move(e));
}

void KvcStore::discard(const std::string& name, const std::string& why) {
  log("kv cache: removing " + name + ": " + why);
  remove(name);
}

uint64_t KvcStore::bytes_used() const {
  uint64_t n = reserved_bytes_ + foreign_tmp_bytes_;
  for (const KvcEntry& e : entries_) n += e.file_bytes;
  return n;
}

void KvcStore::evict_for(uint64_t incoming, const PreparedKvc* in) {
  const uint64_t now = o_.now();
  // §3.6 (N): a continued file that the incoming one continues -- its text a strict prefix of the
  // incoming text, the same model, the quant admitted, a context >= the incoming one's (so the
  // incoming file loads into every session it does), no visible-transcript key the incoming file
  // lacks -- is worth less: the incoming file serves those prompts with more tokens. Its score is
  // scaled by 0.05 + 0.45 h/(h+1) (h: its hits), so a file that kept being hit keeps more value.
  constexpr uint8_t kVisible = kKvcResponsesTextFlag | kKvcThinkingTextFlag;
  const auto continues = [&](const KvcEntry& e) {
    if (in == nullptr || e.name == in->name || e.header.reason != SaveReason::kContinued) {
      return false;
    }
    const KvcHeader& h = in->header;
    if (e.text_bytes >= in->text.size() || e.header.model != h.model ||
        (o_.strict_quant && e.header.quant_bits != h.quant_bits) || e.header.n_ctx < h.n_ctx ||
        (h.flags & ~e.header.flags & kVisible) != 0) {
      return false;
    }
    return sha1_hex(std::string_view(in->text).substr(0, e.text_bytes)) + ".kv" == e.name;
  };
  std::vector<std::string> devalued;
  for (const KvcEntry& e : entries_) {
    if (continues(e)) devalued.push_back(e.name);
  }
  auto score = [&](const KvcEntry& e) {
    const uint64_t used = e.header.last_used != 0 ? e.header.last_used : e.header.created;
    const double age = now > used ? static_cast<double>(now - used) : 0.0;
    double hits = e.header.hits * std::exp2(-age / kHitHalfLifeSeconds);
    if (hits < 0.01) hits = 0;
    const bool anchor = e.header.reason == SaveReason::kCold ||
                        e.header.reason == SaveReason::kEvict ||
                        e.header.reason == SaveReason::kShutdown;
    double s = (hits + 1) * e.header.tokens /
               static_cast<double>(std::max<uint64_t>(1, e.file_bytes)) * (anchor ? 2.0 : 1.0);
    if (std::find(devalued.begin(), devalued.end(), e.name) != devalued.end()) {
      s *= devaluation(e.header.hits);
    }
    return s;
  };
  while (!entries_.empty() && bytes_used() + incoming > o_.budget_bytes) {
    const KvcEntry* worst = nullptr;
    double worst_score = 0;
    for (const KvcEntry& e : entries_) {
      const double sc = score(e);
      if (worst == nullptr || sc < worst_score ||
          (sc == worst_score && e.header.last_used < worst->header.last_used)) {
        worst = &e;
        worst_score = sc;
      }
    }
    if (worst == nullptr) break;
    log("kv cache: evicting " + worst->name + " (" + std::to_string(worst->file_bytes) +
        " bytes) to keep within " + std::to_string(o_.budget_bytes) + " bytes");
    remove(std::string(worst->name));
  }
}

std::optional<KvcStore::ReadKvc> KvcStore::compatible_file(const std::string& name,
                                                           const KvcHeader& header,
                                                           std::string_view text) const {
  // Verified whole: a damaged file is never carried into a new one (it is replaced).
  auto read = read_file(path(name), o_.budget_bytes, o_.limits);
  if (!read.is_ok() || read->view.text != text) return std::nullopt;
  const KvcHeader& h = read->view.header;
  constexpr uint8_t kVisible = kKvcResponsesTextFlag | kKvcThinkingTextFlag;
  if (h.model != header.model || (o_.strict_quant && h.quant_bits != header.quant_bits) ||
      h.n_ctx > header.n_ctx || (h.flags & kVisible) != (header.flags & kVisible)) {
    return std::nullopt;
  }
  return std::move(*read);
}

Result<PreparedKvc> KvcStore::prepare(KvcHeader header, std::string_view text,
                                      std::span<const uint8_t> payload,
                                      std::span<const ToolMapEntry> tool_map) const {
  if (header.created == 0) header.created = o_.now();
  if (header.last_used == 0) header.last_used = header.created;
  PreparedKvc p{.name = sha1_hex(text) + ".kv", .header = header, .text = std::string(text)};
  if (std::optional<ReadKvc> old = compatible_file(p.name, header, text)) {
    // Only the tool-id map changes: the mappings already there stay (their blocks are in the
    // text), the new ones are added.
    std::vector<ToolMapEntry> map(tool_map.begin(), tool_map.end());
    for (const ToolMapEntry& t : old->view.tool_map) {
      if (std::none_of(map.begin(), map.end(), [&](const ToolMapEntry& m) { return m.id == t.id; }))
        map.push_back(t);
    }
    p.header = old->view.header;
    p.kept = true;
    p.tool_map = std::move(map);
    p.payload = old->view.payload;
    p.kept_file = std::move(old->bytes);  // the payload's bytes, which stay where they are
  } else {
    p.tool_map.assign(tool_map.begin(), tool_map.end());
    p.payload = payload;
  }
  p.bytes = KvcWriter(p.header, p.text, p.payload.size(), p.tool_map).file_bytes();
  if (p.bytes > o_.budget_bytes)
    return Status::resource_exhausted("a %llu-byte cache file exceeds the %llu-byte budget",
                                      static_cast<unsigned long long>(p.bytes),
                                      static_cast<unsigned long long>(o_.budget_bytes));
  p.tmp = path("." + p.name + ".tmp." + std::to_string(::getpid()));
  return p;
}

Status KvcStore::reserve(const PreparedKvc& p) {
  DS4_CHECK_MSG(reserved_bytes_ == 0, "KvcStore: a second reservation before commit / abandon");
  evict_for(p.bytes, &p);
  if (bytes_used() + p.bytes > o_.budget_bytes) {
    return Status::resource_exhausted(
        "no room for a %llu-byte cache file: %llu bytes of other processes' temporary files and "
        "kept files already hold the %llu-byte budget",
        static_cast<unsigned long long>(p.bytes), static_cast<unsigned long long>(bytes_used()),
        static_cast<unsigned long long>(o_.budget_bytes));
  }
  reserved_bytes_ = p.bytes;
  return Status::ok();
}

Status KvcStore::write(const PreparedKvc& p, const base::ReadyBytes* ready) const {
  Status st;
  {
    Fd fd(::open(p.tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (fd.get() < 0) {
      return Status::io_error("create '%s': %s", p.tmp.c_str(), std::strerror(errno));
    }
    KvcWriter w(p.header, p.text, p.payload.size(), p.tool_map);
    // A kept file's payload is that file's, final already.
    st = write_kvc(fd.get(), p.tmp, w, p.payload, {}, threads_for(p.bytes),
                   p.kept ? nullptr : ready);
    if (st.is_ok() && ::fsync(fd.get()) != 0)
      st = Status::io_error("fsync '%s': %s", p.tmp.c_str(), std::strerror(errno));
    if (::close(fd.release()) != 0 && st.is_ok())
      st = Status::io_error("close '%s': %s", p.tmp.c_str(), std::strerror(errno));
  }
  if (!st.is_ok()) ::unlink(p.tmp.c_str());
  return st;
}

void KvcStore::abandon(const PreparedKvc& p) {
  ::unlink(p.tmp.c_str());
  reserved_bytes_ = 0;
}

Status KvcStore::commit(const PreparedKvc& p) {
  reserved_bytes_ = 0;  // the file is either in place below, or removed
  auto old = std::find_if(entries_.begin(), entries_.end(),
                          [&](const KvcEntry& e) { return e.name == p.name; });
  if (p.kept && old != entries_.end() &&
      (old->header.hits != p.header.hits || old->header.last_used != p.header.last_used)) {
    // The kept file served a hit after prepare() read it: its bookkeeping goes along.
    if (Status st = rewrite_bookkeeping(p.tmp, old->header.hits, old->header.last_used);
        !st.is_ok()) {
      ::unlink(p.tmp.c_str());
      return st;
    }
  }
  // The file it replaces goes; reserve() made room for the new one beside it.
  if (old != entries_.end()) entries_.erase(old);
  if (::rename(p.tmp.c_str(), path(p.name).c_str()) != 0) {
    const Status st = Status::io_error("rename '%s': %s", p.tmp.c_str(), std::strerror(errno));
    ::unlink(p.tmp.c_str());
    index(p.name);  // an older file of the same text, if any, is still there
    return st;
  }
  Fd dir(::open(o_.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() >= 0) ::fsync(dir.get());
  index(p.name);
  return Status::ok();
}

Status KvcStore::save(KvcHeader header, std::string_view text, std::span<const uint8_t> payload,
                      std::span<const ToolMapEntry> tool_map, const base::ReadyBytes* ready) {
  DS4_ASSIGN_OR_RETURN(PreparedKvc p, prepare(header, text, payload, tool_map));
  DS4_TRY(reserve(p));
  if (Status st = write(p, ready); !st.is_ok()) {
    abandon(p);
    return st;
  }
  return commit(p);
}

std::optional<KvcEntry> KvcStore::find(std::string_view rendered, const KvcQuery& q) const {
  const KvcEntry* best = nullptr;
  for (const KvcEntry& e : entries_) {
    const KvcHeader& h = e.header;
    if (e.text_bytes > rendered.size() || h.tokens < q.min_tokens || h.n_ctx > q.n_ctx ||
        h.model != q.model || (q.strict_quant && h.quant_bits != q.quant_bits) ||
        (h.flags & (kKvcResponsesTextFlag | kKvcThinkingTextFlag) & ~q.visible_keys) != 0)
      continue;
    if (best != nullptr && (e.text_bytes < best->text_bytes ||
                            (e.text_bytes == best->text_bytes && h.tokens <= best->header.tokens)))
      continue;
    if (sha1_hex(rendered.substr(0, e.text_bytes)) + ".kv" != e.name) continue;
    best = &e;
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

size_t KvcStore::io_threads() {
  if (const char* v = std::getenv("DS4_KVC_THREADS"); v != nullptr) {
    return static_cast<size_t>(std::clamp(std::atoi(v), 1, 64));
  }
  return std::clamp(std::thread::hardware_concurrency() / 2, 1u, 8u);
}

Result<KvcStore::ReadKvc> KvcStore::read_file(const std::string& p, uint64_t max_bytes,
                                              const KvcLimits& limits, KvcReadOptions o) {
  static_assert(kReadPieceBytes % base::kChecksumBlockBytes == 0);
  Fd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0)
    return Status::io_error("open '%s': %s", p.c_str(), std::strerror(errno));
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    return Status::invalid_file("its %llu bytes exceed the %llu-byte budget",
                                static_cast<unsigned long long>(size),
                                static_cast<unsigned long long>(max_bytes));
  }
  base::ByteBuffer bytes(static_cast<size_t>(size));
  KvcHasher hasher(size);
  // Each piece hashed right after its read, while it is in the cache: a second pass over the
  // file would fetch it from memory at a third of the speed. (A helper thread hashing behind the
  // reads cost more than this on the 2-core machine of bench/kvcache.md: the bytes had to cross to
  // its core.)
  const Piece hash = [&](uint64_t, std::span<const uint8_t> piece) {
    if (o.verify) hasher.update(piece);
  };
  const size_t threads = o.threads != 0 ? o.threads : threads_for(size);
  if (threads <= 1) {
    DS4_TRY(read_range(fd.get(), bytes.span(), 0, bytes.size(), p, hash));
  } else {
    const size_t first = std::min(bytes.size(), kReadPieceBytes);
    DS4_TRY(read_range(fd.get(), bytes.span(), 0, first, p, hash));
    // The body's whole blocks are hashed by the thread that reads them, the rest (a block cut
    // by the body's end, the tool map) after the join.
    std::vector<uint64_t> digests(o.verify ? hasher.apart().blocks() : 0);
    DS4_TRY(read_side_by_side(fd.get(), bytes.span(), first, threads, p,
                              [&](uint64_t offset, std::span<const uint8_t> piece) {
                                if (o.verify) hasher.hash_apart(offset, piece, digests);
                              }));
    if (o.verify) {
      hasher.add_apart(digests);
      hasher.update(bytes.span().subspan(static_cast<size_t>(hasher.at())));
    }
  }
  KvcChecksums sums = hasher.sums();
  if (!o.verify && bytes.size() >= kKvcFooterBytes) {
    if (auto stored = decode_kvc_footer(bytes.span().last(kKvcFooterBytes)); stored.is_ok()) {
      sums = *stored;
    }
  }
  DS4_ASSIGN_OR_RETURN(KvcView view, decode_kvc(bytes.span(), limits, &sums));
  return ReadKvc(std::move(bytes), std::move(view));
}

Result<KvcStore::ReadKvc> KvcStore::read(const KvcEntry& entry, std::string_view rendered) {
  auto r = read_file(path(entry.name), o_.budget_bytes, o_.limits);
  if (!r.is_ok() && r.status().code() == StatusCode::kIoError) return r.status();
  std::string bad;
  if (!r.is_ok()) {
    bad = r.status().message();
  } else if (sha1_hex(r->view.text) + ".kv" != entry.name) {
    bad = "its text does not hash to its name";
  } else if (rendered.substr(0, r->view.text.size()) != r->view.text) {
    bad = "its text is not a prefix of the prompt";
  }
  if (!bad.empty()) {
    discard(entry.name, bad);
    return Status::invalid_file("cache file %s: %s", entry.name.c_str(), bad.c_str());
  }
  return r;
}

Status KvcStore::touch(const std::string& name) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const KvcEntry& e) { return e.name == name; });
  if (it == entries_.end()) return Status::not_found("no cache file %s", name.c_str());
  it->header.hits += 1;
  it->header.last_used = o_.now();
  return rewrite_bookkeeping(path(name), it->header.hits, it->header.last_used);
}

void KvcStore::remove(const std::string& name) {
  ::unlink(path(name).c_str());
  std::erase_if(entries_, [&](const KvcEntry& e) { return e.name == name; });
}

void KvcStore::forget(const KvcEntry& entry) {
  std::erase_if(entries_, [&](const KvcEntry& e) { return e.name == entry.name; });
  std::erase_if(refused_, [&](const Refused& r) { return r.name == entry.name; });
  refused_.push_back({entry.name, entry.file_bytes, entry.mtime_ns});
}

std::vector<ToolMapEntry> KvcStore::tool_map_entries(std::span<const std::string> ids,
                                                     KvcModel model) const {
  std::vector<ToolMapEntry> out;
  for (const KvcEntry& e : entries_) {
    if ((e.header.flags & kKvcToolMapFlag) == 0 || e.header.model != model) continue;
    // Only the trailer (the tool-id map and the footer with its checksum) is read: the text and
    // the payload are skipped.
    const std::string p = path(e.name);
    Fd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) continue;
    const uint64_t at = kvc_payload_offset(e.text_bytes) + e.header.payload_bytes;
    std::vector<uint8_t> section(static_cast<size_t>(e.file_bytes - at));
    if (::pread(fd.get(), section.data(), section.size(), static_cast<off_t>(at)) !=
        static_cast<ssize_t>(section.size()))
      continue;
    std::string error;
    std::vector<ToolMapEntry> map = decode_kvc_trailer(section, o_.limits, &error);
    if (!error.empty()) log("kv cache: " + e.name + ": " + error);
    for (ToolMapEntry& t : map) {
      if (std::find(ids.begin(), ids.end(), t.id) != ids.end() &&
          std::none_of(out.begin(), out.end(), [&](const ToolMapEntry& o) { return o.id == t.id; }))
        out.push_back(std::move(t));
    }
  }
  return out;
}

Status save_while_filling(KvcStore& store, KvcHeader header, std::string_view text,
                          std::span<uint8_t> payload, std::span<const ToolMapEntry> tool_map,
                          const base::FillBytes& fill) {
  base::ReadyBytes ready(payload.size());
  return base::fill_beside(ready, fill,
                           [&] { return store.save(header, text, payload, tool_map, &ready); });
}

}  // namespace ds4::kv
