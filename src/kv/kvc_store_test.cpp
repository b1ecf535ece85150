// Protects: the disk KV cache directory (features.md §3.1, §3.5-3.7): files named by the SHA-1 of
// their text (the digest checked against a published test vector), the longest-prefix lookup and
// its filters, bookkeeping in place, eviction under the byte budget, hostile, damaged and obsolete
// files removed with one log line each (a flipped or NaN payload byte, another token count, a
// truncated file, a version-1 file: issue 47 item 3) while a newer version's files and ds4-agent
// session files are left alone, a failed write (a full disk, made with RLIMIT_FSIZE) that keeps
// every older file intact, the stepwise write (prepare: encoded only; reserve: room made first, so
// the budget holds while the temporary file exists; write; commit: in place and indexed), and the
// temporary files of saves that were killed.
#include "kv/kvc_store.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "gguf/test_util.h"
#include "kv/kvc_store_test_util.h"

namespace ds4::kv {
namespace {

using gguf::testing::TempDir;
using testing::header;
using testing::options;
using testing::payload;
using testing::query;

TEST(KvcStore, Sha1MatchesTheFips180Vector) {
  EXPECT_EQ(sha1_hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(sha1_hex(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
}

TEST(KvcStore, SavedFilesAreFoundByTheirLongestRenderedPrefix) {
  TempDir tmp;
  std::vector<std::string> logs;
  auto s = KvcStore::open(options(tmp.file("kv"), 1 << 20, &logs));
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  ASSERT_TRUE(s->save(header(10), "<bos>system", payload(100), {}).is_ok());
  ASSERT_TRUE(s->save(header(20), "<bos>system<user>hello", payload(200), {}).is_ok());
  ASSERT_TRUE(s->save(header(30), "<bos>other", payload(300), {}).is_ok());
  EXPECT_TRUE(std::filesystem::exists(tmp.file("kv") + "/" + sha1_hex("<bos>system") + ".kv"));
  const std::string prompt = "<bos>system<user>hello<assistant>";
  auto hit = s->find(prompt, query());
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->header.tokens, 20u);
  auto read = s->read(*hit, prompt);
  ASSERT_TRUE(read.is_ok()) << read.status().to_string();
  auto v = decode_kvc(read->bytes.span());
  ASSERT_TRUE(v.is_ok());
  EXPECT_EQ(v->text, "<bos>system<user>hello");
  EXPECT_EQ(v->payload.size(), 200u);
  EXPECT_EQ(read->view.text, v->text);  // the view read() hands back is that decoding
  EXPECT_EQ(read->view.payload.data(), v->payload.data());
  // Filters: too few tokens, a larger context, another model, a different quant in strict mode.
  KvcQuery q = query();
  q.min_tokens = 25;
  EXPECT_FALSE(s->find(prompt, q).has_value());
  q = query();
  q.n_ctx = 2048;
  EXPECT_FALSE(s->find(prompt, q).has_value());
  q = query();
  q.model = KvcModel::kPro;
  EXPECT_FALSE(s->find(prompt, q).has_value());
  q = query();
  q.quant_bits = 4;
  EXPECT_TRUE(s->find(prompt, q).has_value());  // 2 and 4 bits interchange by default
  q.strict_quant = true;
  EXPECT_FALSE(s->find(prompt, q).has_value());
  EXPECT_FALSE(s->find("<bos>syst", query()).has_value());
  // A restart sees the same files.
  auto again = KvcStore::open(options(tmp.file("kv"), 1 << 20, &logs));
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->entries().size(), 3u);
  EXPECT_TRUE(logs.empty());
}

TEST(KvcStore, TouchRewritesHitsAndLastUseInPlace) {
  TempDir tmp;
  std::vector<std::string> logs;
  auto s = KvcStore::open(options(tmp.file("kv"), 1 << 20, &logs));
  ASSERT_TRUE(s.is_ok());
  KvcHeader h = header(5);
  h.created = 100;
  ASSERT_TRUE(s->save(h, "text", payload(10), {}).is_ok());
  const std::string name = sha1_hex("text") + ".kv";
  ASSERT_TRUE(s->touch(name).is_ok());
  auto reopened = KvcStore::open(options(tmp.file("kv"), 1 << 20, &logs));
  ASSERT_EQ(reopened->entries().size(), 1u);
  EXPECT_EQ(reopened->entries()[0].header.hits, 1u);
  EXPECT_EQ(reopened->entries()[0].header.last_used, 1764576000u);
  EXPECT_EQ(reopened->entries()[0].header.created, 100u);
  // Only the hit count and last use are written, the fields the checksum leaves out: the file
  // still verifies, also when another server replaced it after this one indexed it.
  const std::string path = tmp.file("kv/" + name);
  EXPECT_TRUE(decode_kvc(gguf::testing::read_bytes(path)).is_ok());
  KvcHeader other = header(7);
  other.n_ctx = 1024;  // a smaller context: the file is replaced, not kept
  ASSERT_TRUE(reopened->save(other, "text", payload(30), {}).is_ok());
  ASSERT_TRUE(s->touch(name).is_ok());  // s indexed the old file
  auto v = decode_kvc(gguf::testing::read_bytes(path));
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_EQ(v->header.tokens, 7u);
  EXPECT_EQ(v->header.hits, 2u);
}

TEST(KvcStore, EvictionKeepsTheBudgetAndTheNewestFile) {
  TempDir tmp;
  std::vector<std::string> logs;
  // Each file is 48 + 4 + 1 + 1000 + 24 bytes; three fit in 3,300, a fourth does not.
  auto s = KvcStore::open(options(tmp.file("kv"), 3300, &logs));
  ASSERT_TRUE(s.is_ok());
  for (const char* t : {"a", "b", "c", "d"}) {
    ASSERT_TRUE(s->save(header(8), t, payload(1000), {}).is_ok());
    EXPECT_LE(s->bytes_used(), 3300u);
  }
  EXPECT_EQ(s->entries().size(), 3u);
  EXPECT_TRUE(s->find("d", query()).has_value());
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find("evicting"), std::string::npos);
  // A file larger than the whole budget is refused, and nothing is evicted for it.
  EXPECT_EQ(s->save(header(8), "e", payload(4000), {}).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s->entries().size(), 3u);
}

TEST(KvcStore, HostileFilesAreRemovedAtOpenAndDamagedOnesOnRead) {
  TempDir tmp;
  std::vector<std::string> logs;
  const std::string dir = tmp.file("kv");
  {
    auto s = KvcStore::open(options(dir, 1 << 20, &logs));
    ASSERT_TRUE(s->save(header(9), "good text", payload(50), {}).is_ok());
  }
  const std::string fake = dir + "/" + sha1_hex("bad") + ".kv";
  std::ofstream(fake) << "not a cache file at all, just some bytes of junk here...";
  const std::string liar = dir + "/" + sha1_hex("liar") + ".kv";
  {
    std::vector<uint8_t> f = encode_kvc(header(9), "liar", payload(50), {});
    f[40] = 0xff;  // the header claims a payload longer than the file
    std::ofstream(liar, std::ios::binary)
        .write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size()));
  }
  std::ofstream(dir + "/notes.txt") << "ignored: not a cache name";
  auto s = KvcStore::open(options(dir, 1 << 20, &logs));
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->entries().size(), 1u);
  ASSERT_EQ(logs.size(), 2u);
  for (const std::string& l : logs) EXPECT_EQ(l.rfind("kv cache: removing ", 0), 0u) << l;
  EXPECT_FALSE(std::filesystem::exists(fake));
  EXPECT_FALSE(std::filesystem::exists(liar));
  EXPECT_TRUE(std::filesystem::exists(dir + "/notes.txt"));
  // A file whose text no longer hashes to its name (and so no longer to its checksum) is removed
  // when read.
  const std::string good = dir + "/" + sha1_hex("good text") + ".kv";
  {
    std::fstream f(good, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(52);
    f.put('G');
  }
  auto hit = s->find("good text and more", query());
  ASSERT_TRUE(hit.has_value());
  EXPECT_FALSE(s->read(*hit, "good text and more").is_ok());
  EXPECT_FALSE(std::filesystem::exists(good));
  EXPECT_TRUE(s->entries().empty());
}

// What to do to a sound file, the log line's reason, and whether the store sees it at open
// (the header and the footer are checked there) or only when it reads the whole file.
struct Damage {
  const char* what;
  std::function<void(std::vector<uint8_t>&)> apply;
  const char* reason;
  bool at_open;
};

std::vector<Damage> damages() {
  // The payload starts after the 48-byte header, the 4-byte text length and the text.
  const size_t payload_at = kvc_payload_offset(static_cast<uint32_t>(std::strlen("<bos>kept")));
  return {
      {"a flipped payload byte", [=](auto& f) { f[payload_at + 10] ^= 0x04; }, "checksum mismatch",
       false},
      {"a NaN in the payload",
       [=](auto& f) {
         const float nan = std::nanf("");
         std::memcpy(f.data() + payload_at + 16, &nan, 4);
       },
       "checksum mismatch", false},
      {"another token count in the header", [](auto& f) { f[8] += 1; }, "checksum mismatch", false},
      {"a truncated file", [](auto& f) { f.resize(f.size() - 100); }, "cut short", true},
      {"a damaged footer", [](auto& f) { f[f.size() - 24] = 'X'; }, "footer is missing", true},
      {"a version-1 file",
       [](auto& f) {
         f.resize(f.size() - 24);  // the spec's layout: no footer
         f[3] = 1;
       },
       "KVC version 1", true},
  };
}

// issue 47 item 3: a damaged file -- at open or at read -- is removed with one log line naming it
// and the reason, leaves the index and the byte count, and the lookup finds nothing (the request
// is a miss).
TEST(KvcStore, DamagedFilesAreRemovedWithOneLogLine) {
  for (const Damage& d : damages()) {
    TempDir tmp;
    std::vector<std::string> logs;
    const std::string dir = tmp.file("kv");
    const std::string name = sha1_hex("<bos>kept") + ".kv";
    {
      auto s = KvcStore::open(options(dir, 1 << 20, &logs));
      ASSERT_TRUE(s->save(header(9), "<bos>kept", payload(200), {}).is_ok());
    }
    std::vector<uint8_t> f = gguf::testing::read_bytes(dir + "/" + name);
    d.apply(f);
    std::ofstream(dir + "/" + name, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size()));
    auto s = KvcStore::open(options(dir, 1 << 20, &logs));
    ASSERT_TRUE(s.is_ok()) << d.what;
    EXPECT_EQ(s->entries().empty(), d.at_open) << d.what;
    if (!d.at_open) {
      EXPECT_TRUE(logs.empty()) << d.what;
      auto hit = s->find("<bos>kept and more", query());
      ASSERT_TRUE(hit.has_value()) << d.what;
      const auto read = s->read(*hit, "<bos>kept and more");
      ASSERT_FALSE(read.is_ok()) << d.what;
      EXPECT_EQ(read.status().code(), StatusCode::kInvalidFile) << d.what;
    }
    ASSERT_EQ(logs.size(), 1u) << d.what;
    EXPECT_EQ(logs[0].rfind("kv cache: removing " + name + ": ", 0), 0u) << logs[0];
    EXPECT_NE(logs[0].find(d.reason), std::string::npos) << d.what << ": " << logs[0];
    EXPECT_FALSE(std::filesystem::exists(dir + "/" + name)) << d.what;
    EXPECT_TRUE(s->entries().empty()) << d.what;
    EXPECT_EQ(s->bytes_used(), 0u) << d.what;
    EXPECT_FALSE(s->find("<bos>kept and more", query()).has_value()) << d.what;
    s->rescan();
    EXPECT_EQ(logs.size(), 1u) << d.what;
  }
}

// A newer build's file (version 3) may be sound and that build may share the directory: it is left
// alone, logged once however often the directory is rescanned, and never used.
TEST(KvcStore, ANewerVersionIsLeftAlone) {
  TempDir tmp;
  std::vector<std::string> logs;
  const std::string dir = tmp.file("kv");
  const std::string path = dir + "/" + sha1_hex("<bos>later") + ".kv";
  {
    auto s = KvcStore::open(options(dir, 1 << 20, &logs));
    ASSERT_TRUE(s->save(header(9), "<bos>later", payload(100), {}).is_ok());
  }
  std::vector<uint8_t> f = gguf::testing::read_bytes(path);
  f[3] = 3;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size()));
  auto s = KvcStore::open(options(dir, 1 << 20, &logs));
  s->rescan();
  s->rescan();
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find("skipping"), std::string::npos) << logs[0];
  EXPECT_NE(logs[0].find("version 3 is newer"), std::string::npos) << logs[0];
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_FALSE(s->find("<bos>later!", query()).has_value());
}

// §3.3 with damage: a save whose same-name file is damaged replaces it (the damaged payload is not
// carried into the new file); the tool-id restore skips a map that fails its checksum.
TEST(KvcStore, DamagedFilesAreNeitherKeptNorMined) {
  TempDir tmp;
  std::vector<std::string> logs;
  const std::string dir = tmp.file("kv");
  auto s = KvcStore::open(options(dir, 1 << 20, &logs));
  const std::string text = "<bos>same";
  const std::string path = dir + "/" + sha1_hex(text) + ".kv";
  const std::vector<ToolMapEntry> a = {{"call_a", "<dsml a>"}}, b = {{"call_b", "<dsml b>"}};
  ASSERT_TRUE(s->save(header(9), text, payload(100), a).is_ok());
  std::vector<uint8_t> f = gguf::testing::read_bytes(path);
  f[kvc_payload_offset(static_cast<uint32_t>(text.size())) + 5] ^= 1;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size()));
  const std::vector<uint8_t> fresh(100, 0x33);
  auto p = s->prepare(header(9), text, fresh, b);
  ASSERT_TRUE(p.is_ok());
  EXPECT_FALSE(p->kept);
  ASSERT_TRUE(s->reserve(*p).is_ok() && s->write(*p).is_ok() && s->commit(*p).is_ok());
  const auto bytes = gguf::testing::read_bytes(path);
  auto v = decode_kvc(bytes);
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_EQ(std::vector<uint8_t>(v->payload.begin(), v->payload.end()), fresh);
  EXPECT_EQ(v->tool_map, b);
  // A flipped byte inside the map: its entries are not restored, and that is logged.
  std::vector<uint8_t> g = bytes;
  g[g.size() - 24 - 3] ^= 1;  // the last DSML byte
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(g.data()), static_cast<std::streamsize>(g.size()));
  logs.clear();
  const std::vector<std::string> want = {"call_b"};
  EXPECT_TRUE(s->tool_map_entries(want, KvcModel::kFlash).empty());
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find("checksum"), std::string::npos) << logs[0];
}

TEST(KvcStore, FailedWriteKeepsOlderFilesIntact) {
  TempDir tmp;
  std::vector<std::string> logs;
  auto s = KvcStore::open(options(tmp.file("kv"), 1 << 30, &logs));
  ASSERT_TRUE(s->save(header(9), "kept", payload(100), {}).is_ok());
  ASSERT_TRUE(s->save(header(9), "replaced", payload(100), {}).is_ok());
  // A full disk: writes beyond 64 KiB fail with EFBIG (SIGXFSZ ignored) in a child process, so
  // the limit cannot leak into the rest of the test run.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{65536, 65536};
    setrlimit(RLIMIT_FSIZE, &lim);
    KvcHeader h = header(9);
    h.n_ctx = 2048;  // the old file's 4096 does not fit such a session: it is replaced (§3.3)
    const Status big = s->save(h, "replaced", payload(1 << 20), {});
    _exit(big.is_ok() ? 1 : big.code() == StatusCode::kIoError ? 0 : 2);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  auto after = KvcStore::open(options(tmp.file("kv"), 1 << 30, &logs));
  ASSERT_EQ(after->entries().size(), 2u);
  auto hit = after->find("replaced!", query());
  ASSERT_TRUE(hit.has_value());
  auto read = after->read(*hit, "replaced!");
  ASSERT_TRUE(read.is_ok());
  EXPECT_EQ(decode_kvc(read->bytes.span())->payload.size(), 100u);  // the old file, whole
  for (const auto& e : std::filesystem::directory_iterator(tmp.file("kv")))
    EXPECT_EQ(e.path().extension(), ".kv") << e.path();  // no temporary left behind
}

TEST(KvcStore, ToolMapEntriesComeFromAnyFile) {
  TempDir tmp;
  std::vector<std::string> logs;
  auto s = KvcStore::open(options(tmp.file("kv"), 1 << 20, &logs));
  const std::vector<ToolMapEntry> a = {{"call_a", "<dsml a>"}}, b = {{"call_b", "<dsml b>"}};
  ASSERT_TRUE(s->save(header(9), "one", payload(10), a).is_ok());
  ASSERT_TRUE(s->save(header(9), "two", payload(10), b).is_ok());
  ASSERT_TRUE(s->save(header(9), "three", payload(10), {}).is_ok());
  const std::vector<std::string> want = {"call_b", "call_a", "call_x"};
  auto got = s->tool_map_entries(want, KvcModel::kFlash);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(std::find(got.begin(), got.end(), a[0]) != got.end());
  EXPECT_TRUE(std::find(got.begin(), got.end(), b[0]) != got.end());
}

TEST(KvcStore, PrepareWritesOnlyATemporaryFileAndCommitPutsItInPlace) {
  TempDir tmp;
  std::vector<std::string> logs;
  auto s = KvcStore::open(options(tmp.file("kv"), 1 << 20, &logs));
  ASSERT_TRUE(s.is_ok());
  const std::vector<uint8_t> bytes = payload(64);  // prepare() refers to it until the write
  auto p = s->prepare(header(9), "<bos>prepared", bytes, {});
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_FALSE(std::filesystem::exists(p->tmp));  // prepare() only encodes
  ASSERT_TRUE(s->reserve(*p).is_ok());
  EXPECT_EQ(s->bytes_used(), p->bytes);  // the reservation counts
  ASSERT_TRUE(s->write(*p).is_ok());
  EXPECT_TRUE(s->entries().empty());
  EXPECT_TRUE(std::filesystem::exists(p->tmp));
  EXPECT_FALSE(std::filesystem::exists(tmp.file("kv/" + p->name)));
  EXPECT_FALSE(s->find("<bos>prepared!", query()).has_value());
  ASSERT_TRUE(s->commit(*p).is_ok());
  EXPECT_FALSE(std::filesystem::exists(p->tmp));
  ASSERT_EQ(s->entries().size(), 1u);
  EXPECT_EQ(s->entries()[0].file_bytes, p->bytes);
  EXPECT_EQ(s->bytes_used(), p->bytes);
  auto hit = s->find("<bos>prepared!", query());
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->name, p->name);
  // An abandoned save leaves nothing and gives its room back.
  auto q = s->prepare(header(9), "<bos>abandoned", bytes, {});
  ASSERT_TRUE(q.is_ok() && s->reserve(*q).is_ok() && s->write(*q).is_ok());
  s->abandon(*q);
  EXPECT_FALSE(std::filesystem::exists(q->tmp));
  EXPECT_EQ(s->bytes_used(), p->bytes);
}

// The directory's bytes on disk, every file counted (temporary ones too).
uint64_t dir_bytes(const std::string& dir) {
  uint64_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.file_size();
  return n;
}

// Files are evicted before the new one is written: the budget holds while its temporary file
// exists, not only after the rename.
TEST(KvcStore, TheBudgetHoldsWhileANewFileIsWritten) {
  TempDir tmp;
  std::vector<std::string> logs;
  const std::string dir = tmp.file("kv");
  auto probe = KvcStore::open(options(dir, 1 << 20, &logs));
  ASSERT_TRUE(probe->save(header(9), "text 0", payload(1000), {}).is_ok());
  const uint64_t one = probe->entries()[0].file_bytes;
  const uint64_t budget = 3 * one + 10;
  auto s = KvcStore::open(options(dir, budget, &logs));
  for (int i = 1; i < 3; ++i) {
    ASSERT_TRUE(s->save(header(9), "text " + std::to_string(i), payload(1000), {}).is_ok());
  }
  ASSERT_EQ(dir_bytes(dir), 3 * one);                // full
  const std::vector<uint8_t> bytes = payload(1000);  // prepare() refers to it until the write
  auto p = s->prepare(header(9), "text 3", bytes, {});
  ASSERT_TRUE(p.is_ok());
  ASSERT_TRUE(s->reserve(*p).is_ok());
  ASSERT_TRUE(s->write(*p).is_ok());
  EXPECT_LE(dir_bytes(dir), budget) << "the temporary file pushed the directory past the budget";
  ASSERT_TRUE(s->commit(*p).is_ok());
  EXPECT_LE(dir_bytes(dir), budget);
  EXPECT_EQ(s->entries().size(), 3u);
}

// A save killed mid-write (kill -9) leaves ".<sha1>.kv.tmp.<pid>": the next open removes it and
// says so; the temporary file of a process that still runs is left alone and counted.
TEST(KvcStore, StaleTemporaryFilesAreRemovedAtOpenAndLiveOnesCounted) {
  TempDir tmp;
  std::vector<std::string> logs;
  const std::string dir = tmp.file("kv");
  ASSERT_TRUE(KvcStore::open(options(dir, 1 << 20, &logs)).is_ok());
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_GT(gone, 0);
  ASSERT_EQ(waitpid(gone, nullptr, 0), gone);  // reaped: the pid names no process now
  const std::string sha = sha1_hex("interrupted");
  const std::string stale = dir + "/." + sha + ".kv.tmp." + std::to_string(gone);
  const std::string live = dir + "/." + sha + ".kv.tmp.1";  // pid 1 runs
  std::ofstream(stale) << std::string(500, 'x');
  std::ofstream(live) << std::string(300, 'y');
  std::ofstream(dir + "/.not-ours.kv.tmp.5") << "z";  // another name: neither removed nor counted
  logs.clear();
  auto s = KvcStore::open(options(dir, 1 << 20, &logs));
  ASSERT_TRUE(s.is_ok());
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(live));
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find("temporary file of a save that was interrupted"), std::string::npos)
      << logs[0];
  EXPECT_EQ(s->foreign_temp_files(), 1u);
  EXPECT_EQ(s->bytes_used(), 300u);
  std::filesystem::remove(live);
  s->rescan();
  EXPECT_EQ(s->bytes_used(), 0u);
}

// A ds4-agent session file (flag bit 3; named by its title and creation time, not by the SHA-1 of
// its text) in the same directory is skipped with one log line, however often the directory is
// rescanned: never indexed, never removed, never evicted, never found.
TEST(KvcStore, AgentSessionFilesAreLeftAlone) {
  TempDir tmp;
  std::vector<std::string> logs;
  const std::string dir = tmp.file("kv");
  ASSERT_TRUE(KvcStore::open(options(dir, 1 << 20, &logs)).is_ok());
  KvcHeader h = header(9);
  h.reason = SaveReason::kAgentSession;
  h.flags = kKvcAgentFlag;
  const std::string text = "ds4-agent-session 1\n{}\n<bos>agent";
  const std::vector<uint8_t> f = encode_kvc(h, text, payload(4000), {});
  const std::string path = dir + "/" + sha1_hex("a title and a time") + ".kv";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size()));
  auto s = KvcStore::open(options(dir, 1000, &logs));  // a budget the file alone exceeds
  ASSERT_TRUE(s.is_ok());
  s->rescan();
  ASSERT_TRUE(s->save(header(9), "<bos>cache", payload(100), {}).is_ok());
  s->rescan();
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find("skipping " + sha1_hex("a title and a time") + ".kv: a ds4-agent"),
            std::string::npos)
      << logs[0];
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_EQ(gguf::testing::read_bytes(path), f);
  ASSERT_EQ(s->entries().size(), 1u);
  EXPECT_EQ(s->entries()[0].name, sha1_hex("<bos>cache") + ".kv");
  EXPECT_FALSE(s->find(text + "!", query()).has_value());
}

TEST(KvcStore, OpeningWithASmallerBudgetEvictsAtOnce) {
  TempDir tmp;
  std::vector<std::string> logs;
  {
    auto s = KvcStore::open(options(tmp.file("kv"), 1 << 20, &logs));
    for (int i = 0; i < 4; ++i) {
      ASSERT_TRUE(s->save(header(9), "text " + std::to_string(i), payload(1000), {}).is_ok());
    }
    ASSERT_EQ(s->entries().size(), 4u);
  }
  const uint64_t one =
      KvcStore::open(options(tmp.file("kv"), 1 << 20, &logs))->entries()[0].file_bytes;
  auto s = KvcStore::open(options(tmp.file("kv"), 2 * one + 10, &logs));
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->entries().size(), 2u);
  EXPECT_LE(s->bytes_used(), 2 * one + 10);
}

TEST(KvcStore, RescanSeesFilesOthersWroteOrRemovedAndRemovesHostileOnes) {
  TempDir tmp;
  std::vector<std::string> logs;
  auto mine = KvcStore::open(options(tmp.file("kv"), 1 << 20, &logs));
  auto other = KvcStore::open(options(tmp.file("kv"), 1 << 20, &logs));
  ASSERT_TRUE(mine.is_ok() && other.is_ok());
  ASSERT_TRUE(other->save(header(9), "<bos>theirs", payload(50), {}).is_ok());
  EXPECT_FALSE(mine->find("<bos>theirs!", query()).has_value());
  mine->rescan();
  auto hit = mine->find("<bos>theirs!", query());
  ASSERT_TRUE(hit.has_value());
  EXPECT_TRUE(mine->read(*hit, "<bos>theirs!").is_ok());
  // Rewritten by the other server (another size; a smaller context, so the file is replaced, not
  // kept): re-read, and still readable.
  KvcHeader smaller = header(12);
  smaller.n_ctx = 2048;
  ASSERT_TRUE(other->save(smaller, "<bos>theirs", payload(80), {}).is_ok());
  mine->rescan();
  hit = mine->find("<bos>theirs!", query());
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->header.tokens, 12u);
  EXPECT_TRUE(mine->read(*hit, "<bos>theirs!").is_ok());
  // A hostile file is removed with one log line at the next rescan.
  const std::string bad = tmp.file("kv/" + std::string(40, 'a') + ".kv");
  std::ofstream(bad) << "not a cache file";
  logs.clear();
  mine->rescan();
  mine->rescan();
  EXPECT_EQ(std::count_if(logs.begin(), logs.end(),
                          [](const std::string& l) { return l.find("removing") != l.npos; }),
            1);
  EXPECT_FALSE(std::filesystem::exists(bad));
  // The user wipes the directory.
  std::filesystem::remove(tmp.file("kv/" + hit->name));
  mine->rescan();
  EXPECT_FALSE(mine->find("<bos>theirs!", query()).has_value());
  EXPECT_EQ(mine->bytes_used(), 0u);
}

// Header bits 1 and 2 (features.md §3.1, §1.13): a file keyed by a visible transcript serves only
// the protocol whose rendering it is; a token-text file serves every request.
TEST(KvcStore, VisibleTranscriptKeysServeOnlyTheirProtocol) {
  TempDir tmp;
  std::vector<std::string> logs;
  auto s = KvcStore::open(options(tmp.file("kv"), 1 << 20, &logs));
  ASSERT_TRUE(s.is_ok());
  const std::string base = "<bos>system<user>q<assistant>";
  const std::string responses = base + "</think>answer one";
  const std::string thinking = base + "</think>answer two";
  ASSERT_TRUE(s->save(header(5), base, payload(10), {}).is_ok());
  KvcHeader hr = header(20);
  hr.flags = kKvcResponsesTextFlag;
  ASSERT_TRUE(s->save(hr, responses, payload(10), {}).is_ok());
  KvcHeader ht = header(30);
  ht.flags = kKvcThinkingTextFlag;
  ASSERT_TRUE(s->save(ht, thinking, payload(10), {}).is_ok());
  const auto tokens_for = [&](const std::string& prompt, uint8_t visible) -> uint32_t {
    KvcQuery q = query();
    q.visible_keys = visible;
    auto hit = s->find(prompt, q);
    return hit ? hit->header.tokens : 0;
  };
  const std::string next_r = responses + "<user>more", next_t = thinking + "<user>more";
  EXPECT_EQ(tokens_for(next_r, kKvcResponsesTextFlag), 20u);
  EXPECT_EQ(tokens_for(next_r, kKvcThinkingTextFlag), 5u);
  EXPECT_EQ(tokens_for(next_r, 0), 5u);
  EXPECT_EQ(tokens_for(next_t, kKvcThinkingTextFlag), 30u);
  EXPECT_EQ(tokens_for(next_t, kKvcResponsesTextFlag), 5u);
  EXPECT_EQ(tokens_for(next_t, 0), 5u);
  // The bits are in the file: a new server reads them back.
  auto reopened = KvcStore::open(options(tmp.file("kv"), 1 << 20, &logs));
  ASSERT_TRUE(reopened.is_ok());
  KvcQuery q = query();
  q.visible_keys = kKvcThinkingTextFlag;
  auto hit = reopened->find(next_t, q);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->header.flags & (kKvcResponsesTextFlag | kKvcThinkingTextFlag),
            kKvcThinkingTextFlag);
}

// §3.6 (N): a continued file whose text the incoming file continues is devalued by
// 0.05 + 0.45 h/(h+1): with one hit (factor 0.275) it goes before an equally old file with none,
// which it outscores otherwise -- as when its context is smaller than the incoming one's.
TEST(KvcStore, EvictionDevaluesAContinuedFileTheIncomingOneContinues) {
  for (const uint32_t prefix_ctx : {4096u, 2048u}) {
    TempDir tmp;
    std::vector<std::string> logs;
    auto s = KvcStore::open(options(tmp.file("kv"), 2200, &logs));
    ASSERT_TRUE(s.is_ok());
    KvcHeader prefix = header(8);
    prefix.hits = 1;
    prefix.n_ctx = prefix_ctx;
    ASSERT_TRUE(s->save(prefix, "<bos>conv", payload(1000), {}).is_ok());
    ASSERT_TRUE(s->save(header(8), "<bos>othe", payload(1000), {}).is_ok());
    ASSERT_TRUE(s->save(header(8), "<bos>conversation goes on", payload(1000), {}).is_ok());
    ASSERT_EQ(s->entries().size(), 2u);
    const bool devalued = prefix_ctx >= 4096;  // ctx >= the incoming file's 4096
    EXPECT_EQ(s->find("<bos>conv!", query()).has_value(), !devalued) << prefix_ctx;
    EXPECT_EQ(s->find("<bos>othe!", query()).has_value(), devalued) << prefix_ctx;
    EXPECT_TRUE(s->find("<bos>conversation goes on", query()).has_value());
  }
}

// §3.3: a save whose file exists and is compatible (same text, quant admitted, its context <= the
// new one's) keeps that file -- payload, reason, hits, times -- and rewrites only its tool-id map;
// an incompatible one (a larger context) is replaced.
TEST(KvcStore, SameNameSaveKeepsACompatibleFileAndRewritesOnlyItsToolMap) {
  TempDir tmp;
  std::vector<std::string> logs;
  auto s = KvcStore::open(options(tmp.file("kv"), 1 << 20, &logs));
  ASSERT_TRUE(s.is_ok());
  const std::string text = "<bos>same text";
  const std::string path = tmp.file("kv/" + sha1_hex(text) + ".kv");
  KvcHeader first = header(9);
  first.n_ctx = 2048;
  first.hits = 3;
  first.created = 100;
  first.reason = SaveReason::kCold;
  const std::vector<ToolMapEntry> a = {{"call_a", "<dsml a>"}}, b = {{"call_b", "<dsml b>"}};
  ASSERT_TRUE(s->save(first, text, payload(10), a).is_ok());
  const std::vector<uint8_t> other(20, 0x11);
  ASSERT_TRUE(s->save(header(9), text, other, b).is_ok());  // context 4096 >= 2048: kept
  {
    const auto bytes = gguf::testing::read_bytes(path);
    auto v = decode_kvc(bytes);
    ASSERT_TRUE(v.is_ok()) << v.status().to_string();
    EXPECT_EQ(v->header.n_ctx, 2048u);
    EXPECT_EQ(v->header.hits, 3u);
    EXPECT_EQ(v->header.created, 100u);
    EXPECT_EQ(v->header.reason, SaveReason::kCold);
    EXPECT_EQ(std::vector<uint8_t>(v->payload.begin(), v->payload.end()), payload(10));
    ASSERT_EQ(v->tool_map.size(), 2u);
    EXPECT_EQ(v->tool_map[0], b[0]);
    EXPECT_EQ(v->tool_map[1], a[0]);
  }
  ASSERT_EQ(s->entries().size(), 1u);
  EXPECT_EQ(s->entries()[0].header.hits, 3u);
  // A hit between the two halves of a save is not lost.
  auto p = s->prepare(header(9), text, other, {});
  ASSERT_TRUE(p.is_ok());
  EXPECT_TRUE(p->kept);
  ASSERT_TRUE(s->reserve(*p).is_ok() && s->write(*p).is_ok());
  ASSERT_TRUE(s->touch(sha1_hex(text) + ".kv").is_ok());
  ASSERT_TRUE(s->commit(*p).is_ok());
  EXPECT_EQ(s->entries()[0].header.hits, 4u);
  EXPECT_EQ(decode_kvc(gguf::testing::read_bytes(path))->header.hits, 4u);
  // A session of a smaller context cannot use the old file: it is replaced.
  KvcHeader small = header(9);
  small.n_ctx = 1024;
  ASSERT_TRUE(s->save(small, text, other, b).is_ok());
  const auto bytes = gguf::testing::read_bytes(path);
  auto v = decode_kvc(bytes);
  ASSERT_TRUE(v.is_ok());
  EXPECT_EQ(v->header.n_ctx, 1024u);
  EXPECT_EQ(v->header.hits, 0u);
  EXPECT_EQ(std::vector<uint8_t>(v->payload.begin(), v->payload.end()), other);
  ASSERT_EQ(v->tool_map.size(), 1u);
  EXPECT_EQ(v->tool_map[0], b[0]);
}

// §3.2 (N): tool-id maps come only from files the engine's model wrote.
TEST(KvcStore, ToolMapEntriesComeOnlyFromFilesOfTheModel) {
  TempDir tmp;
  std::vector<std::string> logs;
  auto s = KvcStore::open(options(tmp.file("kv"), 1 << 20, &logs));
  ASSERT_TRUE(s.is_ok());
  KvcHeader pro = header(9);
  pro.model = KvcModel::kPro;
  const std::vector<ToolMapEntry> p = {{"call_p", "<dsml p>"}}, f = {{"call_f", "<dsml f>"}};
  ASSERT_TRUE(s->save(pro, "pro text", payload(10), p).is_ok());
  ASSERT_TRUE(s->save(header(9), "flash text", payload(10), f).is_ok());
  const std::vector<std::string> want = {"call_p", "call_f"};
  EXPECT_EQ(s->tool_map_entries(want, KvcModel::kFlash), f);
  EXPECT_EQ(s->tool_map_entries(want, KvcModel::kPro), p);
}

}  // namespace
}  // namespace ds4::kv
