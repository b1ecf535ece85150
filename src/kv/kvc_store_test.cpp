// Protects: the disk KV cache directory (features.md §3.1, §3.5-3.7): files named by the SHA-1 of
// their text (the digest checked against a published test vector), the longest-prefix lookup and
// its filters, bookkeeping in place, eviction under the byte budget, hostile files skipped, and a
// failed write (a full disk, made with RLIMIT_FSIZE) that keeps every older file intact, and the
// two-step write (prepare: a temporary file only; commit: in place and indexed).
#include "kv/kvc_store.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "gguf/test_util.h"

namespace ds4::kv {
namespace {

using gguf::testing::TempDir;

KvcHeader header(uint32_t tokens) {
  KvcHeader h;
  h.tokens = tokens;
  h.n_ctx = 4096;
  h.reason = SaveReason::kContinued;
  return h;
}

std::vector<uint8_t> payload(size_t n) { return std::vector<uint8_t>(n, 0x5a); }

KvcStoreOptions options(const std::string& dir, uint64_t budget, std::vector<std::string>* logs) {
  KvcStoreOptions o;
  o.dir = dir;
  o.budget_bytes = budget;
  o.now = [] { return uint64_t{1764576000}; };
  o.log = [logs](const std::string& l) { logs->push_back(l); };
  return o;
}

KvcQuery query() {
  KvcQuery q;
  q.min_tokens = 1;
  q.n_ctx = 4096;
  return q;
}

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
  auto v = decode_kvc(read->bytes);
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
}

TEST(KvcStore, EvictionKeepsTheBudgetAndTheNewestFile) {
  TempDir tmp;
  std::vector<std::string> logs;
  // Each file is 48 + 4 + 1 + 1000 bytes; three fit in 3,200, a fourth does not.
  auto s = KvcStore::open(options(tmp.file("kv"), 3200, &logs));
  ASSERT_TRUE(s.is_ok());
  for (const char* t : {"a", "b", "c", "d"}) {
    ASSERT_TRUE(s->save(header(8), t, payload(1000), {}).is_ok());
    EXPECT_LE(s->bytes_used(), 3200u);
  }
  EXPECT_EQ(s->entries().size(), 3u);
  EXPECT_TRUE(s->find("d", query()).has_value());
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find("evicting"), std::string::npos);
  // A file larger than the whole budget is refused, and nothing is evicted for it.
  EXPECT_EQ(s->save(header(8), "e", payload(4000), {}).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s->entries().size(), 3u);
}

TEST(KvcStore, HostileFilesAreSkippedAndDamagedOnesRemovedOnRead) {
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
  EXPECT_EQ(logs.size(), 2u);
  // A file whose text no longer hashes to its name is removed when read.
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
    const Status big = s->save(header(9), "replaced", payload(1 << 20), {});
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
  EXPECT_EQ(decode_kvc(read->bytes)->payload.size(), 100u);  // the old file, whole
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
  auto got = s->tool_map_entries(want);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(std::find(got.begin(), got.end(), a[0]) != got.end());
  EXPECT_TRUE(std::find(got.begin(), got.end(), b[0]) != got.end());
}

TEST(KvcStore, PrepareWritesOnlyATemporaryFileAndCommitPutsItInPlace) {
  TempDir tmp;
  std::vector<std::string> logs;
  auto s = KvcStore::open(options(tmp.file("kv"), 1 << 20, &logs));
  ASSERT_TRUE(s.is_ok());
  auto p = s->prepare(header(9), "<bos>prepared", payload(64), {});
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_TRUE(s->entries().empty());
  EXPECT_TRUE(std::filesystem::exists(p->tmp));
  EXPECT_FALSE(std::filesystem::exists(tmp.file("kv/" + p->name)));
  EXPECT_FALSE(s->find("<bos>prepared!", query()).has_value());
  ASSERT_TRUE(s->commit(*p).is_ok());
  EXPECT_FALSE(std::filesystem::exists(p->tmp));
  ASSERT_EQ(s->entries().size(), 1u);
  EXPECT_EQ(s->entries()[0].file_bytes, p->bytes);
  auto hit = s->find("<bos>prepared!", query());
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->name, p->name);
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

TEST(KvcStore, RescanSeesFilesOthersWroteOrRemovedAndSkipsRefusedOnesQuietly) {
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
  // Rewritten by the other server (another size): re-read, and still readable.
  ASSERT_TRUE(other->save(header(12), "<bos>theirs", payload(80), {}).is_ok());
  mine->rescan();
  hit = mine->find("<bos>theirs!", query());
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->header.tokens, 12u);
  EXPECT_TRUE(mine->read(*hit, "<bos>theirs!").is_ok());
  // A hostile file is logged once, however often the directory is rescanned.
  const std::string bad = tmp.file("kv/" + std::string(40, 'a') + ".kv");
  std::ofstream(bad) << "not a cache file";
  logs.clear();
  mine->rescan();
  mine->rescan();
  EXPECT_EQ(std::count_if(logs.begin(), logs.end(),
                          [](const std::string& l) { return l.find("skipping") != l.npos; }),
            1);
  // The user wipes the directory.
  std::filesystem::remove(tmp.file("kv/" + hit->name));
  mine->rescan();
  EXPECT_FALSE(mine->find("<bos>theirs!", query()).has_value());
  EXPECT_EQ(mine->bytes_used(), 0u);
}

}  // namespace
}  // namespace ds4::kv
