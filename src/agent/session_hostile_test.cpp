// Protects: what the session store does with files it did not write as they are (session_store.h
// "load"): each refusal is one line naming the file and the reason -- missing, larger than the
// size bound (a sparse file: refused by its size before a byte is read), empty, cut at any offset,
// one byte changed in the text, the record or the payload, a header lying about its sizes,
// another model or quant, a renamed file, a record of the wrong types -- and never a crash. And
// saves that do not finish (the write hook throws; a child process killed by SIGKILL in the middle
// of its write) leave the previous file loadable and no temporary file after the next open.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "agent/session_store.h"
#include "agent/session_test_util.h"

namespace ds4::agent {
namespace {

using testing::fake_payload;
using testing::kNow;
using testing::store_options;
using testing::TempDir;

struct Fixture {
  TempDir tmp;
  SessionStore store = SessionStore::open(store_options(tmp.path())).value();
  SessionMeta meta{.title = "hostile", .created = kNow - 10};
  std::string id = session_id(meta.title, meta.created);
  std::string path = tmp / (id + ".kv");
  std::vector<uint8_t> good;

  Fixture() {
    EXPECT_TRUE(store.save(meta, "<bos>a transcript\n", 30, 4096, fake_payload(30, 5000)).is_ok());
    good = testing::read_all(path);
  }
  // The load's error message after the file was replaced by `bytes` ("" when it loads).
  std::string load_error(const std::vector<uint8_t>& bytes) {
    testing::write_all(path, bytes);
    auto r = store.load(id);
    return r.is_ok() ? "" : r.status().message();
  }
};

void expect_names_file(const std::string& message, const std::string& path) {
  EXPECT_EQ(message.rfind("session file " + path, 0), 0u) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(SessionHostile, CutShortAtAnyOffsetIsRefused) {
  Fixture f;
  ASSERT_EQ(f.load_error(f.good), "");
  for (size_t n : {size_t{0}, size_t{1}, size_t{47}, size_t{48}, size_t{51}, size_t{60},
                   size_t{100}, f.good.size() / 2, f.good.size() - 25, f.good.size() - 1}) {
    const std::string e = f.load_error({f.good.begin(), f.good.begin() + static_cast<long>(n)});
    EXPECT_NE(e, "") << n;
    expect_names_file(e, f.path);
  }
  EXPECT_NE(f.load_error({}).find("less than its 48-byte header"), std::string::npos);
}

TEST(SessionHostile, OneChangedByteAnywhereIsRefused) {
  Fixture f;
  // Every byte but the 8 of the last use, which the checksum leaves out (the store rewrites them).
  size_t refused = 0;
  for (size_t at = 0; at < f.good.size(); ++at) {
    if (at >= kv::kKvcLastUsedAt && at < kv::kKvcLastUsedAt + 8) continue;
    if (at >= kv::kKvcHitsAt && at < kv::kKvcHitsAt + 4) continue;  // hits: also bookkeeping
    std::vector<uint8_t> bad = f.good;
    bad[at] ^= 0x01;
    const std::string e = f.load_error(bad);
    EXPECT_NE(e, "") << "byte " << at;
    if (!e.empty()) ++refused;
  }
  EXPECT_EQ(refused, f.good.size() - 12);
  // A byte of the transcript, and one of the payload: the checksum names it.
  std::vector<uint8_t> text = f.good;
  text[f.good.size() - 24 - 5000 - 52 - 3] ^= 0x20;
  EXPECT_NE(f.load_error(text).find("checksum mismatch"), std::string::npos);
  std::vector<uint8_t> payload = f.good;
  payload[f.good.size() - 24 - 100] ^= 0x20;
  EXPECT_NE(f.load_error(payload).find("checksum mismatch"), std::string::npos);
}

TEST(SessionHostile, HeadersThatLieAboutSizesAreRefused) {
  Fixture f;
  std::vector<uint8_t> huge_payload = f.good;
  std::memset(huge_payload.data() + 40, 0xff, 8);
  EXPECT_NE(f.load_error(huge_payload).find("payload of 18446744073709551615 bytes"),
            std::string::npos);
  std::vector<uint8_t> huge_text = f.good;
  std::memset(huge_text.data() + 48, 0xff, 4);
  EXPECT_NE(f.load_error(huge_text).find("runs past the end"), std::string::npos);
  // The listing reads only the head: it skips such files without reading their claims.
  EXPECT_TRUE(f.store.list()->empty());
}

TEST(SessionHostile, HugeFilesAreRefusedByTheirSize) {
  Fixture f;
  auto opts = store_options(f.tmp.path());
  opts.max_file_bytes = uint64_t{1} << 20;
  auto store = SessionStore::open(opts);
  // A sparse file of 64 GiB: reading it would take minutes; its size alone refuses it.
  ASSERT_EQ(::truncate(f.path.c_str(), static_cast<off_t>(uint64_t{64} << 30)), 0);
  auto r = store->load(f.id);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("68719476736 bytes exceed the 1048576-byte limit"),
            std::string::npos)
      << r.status().message();
  expect_names_file(r.status().message(), f.path);
  EXPECT_TRUE(store->list()->empty());
  EXPECT_EQ(store->strip(f.id, [](std::string_view) { return 1u; }).code(),
            StatusCode::kInvalidFile);
}

TEST(SessionHostile, AnotherModelOrQuantIsRefusedByName) {
  Fixture f;
  auto other = SessionStore::open(store_options(f.tmp.path(), "another model"));
  auto r = other->load(f.id);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("saved with another model"), std::string::npos);
  expect_names_file(r.status().message(), f.path);
  auto q4 = SessionStore::open(store_options(f.tmp.path(), testing::kFingerprint, 4));
  EXPECT_NE(q4->load(f.id).status().message().find("saved with 2-bit routed experts"),
            std::string::npos);
  auto pro = store_options(f.tmp.path());
  pro.model.model = kv::KvcModel::kPro;
  EXPECT_NE(SessionStore::open(pro)->load(f.id).status().message().find("another model"),
            std::string::npos);
}

TEST(SessionHostile, ARenamedFileIsRefused) {
  Fixture f;
  const std::string other_id = session_id("something else", kNow);
  std::filesystem::rename(f.path, f.tmp / (other_id + ".kv"));
  auto r = f.store.load(other_id);
  EXPECT_NE(r.status().message().find("its name does not match its title and creation time"),
            std::string::npos);
  EXPECT_EQ(f.store.load(f.id).status().code(), StatusCode::kNotFound);
  EXPECT_NE(f.store.load(f.id).status().message().find("does not exist"), std::string::npos);
  EXPECT_TRUE(f.store.list()->empty());  // skipped, not deleted
  EXPECT_TRUE(std::filesystem::exists(f.tmp / (other_id + ".kv")));
}

// A file whose framing and checksums are sound but whose record is not: written with encode_kvc
// around a hand-made text.
TEST(SessionHostile, RecordsOfTheWrongShapeAreRefused) {
  Fixture f;
  const auto with_text = [&](const std::string& text, uint8_t flags = kv::kKvcAgentFlag,
                             kv::SaveReason reason = kv::SaveReason::kAgentSession) {
    const kv::KvcHeader h{.reason = reason, .flags = flags, .tokens = 30, .n_ctx = 4096};
    return f.load_error(kv::encode_kvc(h, text, fake_payload(30), {}));
  };
  const std::string head = "ds4-agent-session 1\n";
  const std::string good_line =
      R"({"title":"hostile","created":1764575990,"model":"deepseek-v4-flash q2 test-fingerprint","transcript_tokens":30})";
  EXPECT_EQ(with_text(head + good_line + "\nT"), "");
  EXPECT_NE(
      with_text(head +
                R"({"title":["hostile"],"created":1764575990,"model":"m","transcript_tokens":30})"
                "\n")
          .find("\"title\" is not a string"),
      std::string::npos);
  EXPECT_NE(
      with_text(head +
                R"({"title":"hostile","created":"1764575990","model":"m","transcript_tokens":30})"
                "\n")
          .find("\"created\""),
      std::string::npos);
  EXPECT_NE(
      with_text(head +
                R"({"title":"hostile","created":1764575990,"model":"m","transcript_tokens":31})"
                "\n")
          .find("record counts 31"),
      std::string::npos);
  EXPECT_NE(with_text(head + "not json\n").find("not valid JSON"), std::string::npos);
  EXPECT_NE(with_text("").find("does not start with"), std::string::npos);
  EXPECT_NE(with_text(head + good_line + "\n", 0).find("flag 3 clear"), std::string::npos);
  EXPECT_NE(with_text(head + good_line + "\n", kv::kKvcAgentFlag, kv::SaveReason::kAgentSystem)
                .find("system-prompt checkpoint"),
            std::string::npos);
  // A newer build's flag bit: refused, named.
  std::vector<uint8_t> newer = f.good;
  newer[6] |= 0x10;
  EXPECT_NE(f.load_error(newer).find("0x18"), std::string::npos);
}

TEST(SessionHostile, AThrowingWriteHookLeavesThePreviousFile) {
  Fixture f;
  auto opts = store_options(f.tmp.path());
  opts.write_hook = [](size_t written, size_t total) {
    if (written < total) throw std::runtime_error("disk unplugged");
  };
  auto store = SessionStore::open(opts);
  EXPECT_THROW((void)store->save(f.meta, "<bos>a much longer transcript\n", 31, 4096,
                                 fake_payload(31, 3 << 20)),
               std::runtime_error);
  EXPECT_EQ(testing::read_all(f.path), f.good);
  for (const auto& e : std::filesystem::directory_iterator(f.tmp.path()))
    EXPECT_EQ(e.path().filename(), f.id + ".kv");
  EXPECT_TRUE(f.store.load(f.id).is_ok());
}

TEST(SessionHostile, ASaveKilledMidWriteLeavesThePreviousFile) {
  Fixture f;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto opts = store_options(f.tmp.path());
    opts.write_hook = [](size_t written, size_t total) {
      if (written * 2 >= total) ::kill(::getpid(), SIGKILL);
    };
    auto store = SessionStore::open(opts);
    (void)store->save(f.meta, "<bos>a much longer transcript\n", 31, 4096,
                      fake_payload(31, 3 << 20));
    ::_exit(0);  // not reached
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  const std::string temp = f.tmp / ("." + f.id + ".kv.tmp." + std::to_string(child));
  ASSERT_TRUE(std::filesystem::exists(temp));
  EXPECT_GT(std::filesystem::file_size(temp), size_t{1} << 20);
  EXPECT_EQ(testing::read_all(f.path), f.good);
  auto loaded = f.store.load(f.id);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->transcript, "<bos>a transcript\n");
  // The next open removes the dead writer's temporary file; a live writer's is kept.
  const std::string live = f.tmp / ("." + f.id + ".kv.tmp.1");
  testing::put_file(live, "pid 1 runs");
  ASSERT_TRUE(SessionStore::open(store_options(f.tmp.path())).is_ok());
  EXPECT_FALSE(std::filesystem::exists(temp));
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_EQ(f.store.list()->size(), 1u);
}

}  // namespace
}  // namespace ds4::agent
