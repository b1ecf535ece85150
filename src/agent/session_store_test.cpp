// Protects: ds4-agent's session directory (session_store.h) in ordinary use: a save and a load give
// back the transcript and a real DSV4 payload byte for byte, the id stays while a conversation
// grows, the listing (this model's conversations only, most recently used first, whatever else
// lies in the directory), id prefixes, stripping, removal, the system-prompt checkpoint and its
// staleness, and the directory's creation.
#include "agent/session_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <span>
#include <stdexcept>

#include "agent/session_test_util.h"
#include "kv/kvc_file.h"

namespace ds4::agent {
namespace {

using testing::fake_payload;
using testing::kNow;
using testing::real_payload;
using testing::store_options;
using testing::TempDir;

TEST(SessionStore, SaveAndLoadGiveBackTheSessionByteForByte) {
  TempDir tmp;
  auto store = SessionStore::open(store_options(tmp / "a/b/kvcache"));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  struct stat st {};
  ASSERT_EQ(::stat((tmp / "a/b/kvcache").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((tmp / "a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  const std::vector<uint8_t> payload = real_payload(40);
  const std::string transcript = std::string("<｜begin▁of▁sentence｜>sys\0\nhi", 37);
  const SessionMeta meta{.title = make_title("  fix the\nparser "), .created = kNow - 100};
  ASSERT_TRUE(store->save(meta, transcript, 40, 256, payload).is_ok());
  const std::string id = session_id("fix the parser", kNow - 100);
  EXPECT_TRUE(std::filesystem::exists(tmp / ("a/b/kvcache/" + id + ".kv")));
  ASSERT_EQ(::stat((tmp / ("a/b/kvcache/" + id + ".kv")).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto loaded = store->load(id);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->transcript, transcript);
  EXPECT_EQ(loaded->payload, payload);
  EXPECT_EQ(loaded->info.id, id);
  EXPECT_EQ(loaded->info.title, "fix the parser");
  EXPECT_EQ(loaded->info.created, kNow - 100);
  EXPECT_EQ(loaded->info.tokens, 40u);
  EXPECT_EQ(loaded->info.n_ctx, 256u);
  EXPECT_FALSE(loaded->info.stripped);
  EXPECT_EQ(loaded->info.file_bytes,
            std::filesystem::file_size(tmp / ("a/b/kvcache/" + id + ".kv")));
  // The payload is what kv::decode_snapshot accepts for the tiny shape.
  EXPECT_TRUE(kv::decode_snapshot(loaded->payload, model::kTiny, {256, 32}).is_ok());
  // Upper case ids are the same id.
  std::string upper = id;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_TRUE(store->load(upper).is_ok());
}

TEST(SessionStore, SavingAgainKeepsTheIdAndTheCreationTime) {
  TempDir tmp;
  auto store = SessionStore::open(store_options(tmp.path()));
  const SessionMeta meta{.title = "grow", .created = kNow - 500};
  ASSERT_TRUE(store->save(meta, "short", 5, 4096, fake_payload(5)).is_ok());
  ASSERT_TRUE(store->save(meta, "a longer transcript", 12, 4096, fake_payload(12)).is_ok());
  auto list = store->list();
  ASSERT_TRUE(list.is_ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].id, session_id("grow", kNow - 500));
  EXPECT_EQ((*list)[0].tokens, 12u);
  EXPECT_EQ((*list)[0].created, kNow - 500);
  EXPECT_EQ(store->load((*list)[0].id)->transcript, "a longer transcript");
  // No temporary file is left behind.
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path())) {
    EXPECT_EQ(e.path().filename().string()[0] != '.', true) << e.path();
    ++files;
  }
  EXPECT_EQ(files, 1u);
}

TEST(SessionStore, SaveRefusesWhatCouldNotBeLoaded) {
  TempDir tmp;
  auto store = SessionStore::open(store_options(tmp.path()));
  EXPECT_EQ(store->save({.title = "t", .created = 0}, "x", 5, 4096, fake_payload(5)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store->save({.title = "t", .created = kNow}, "x", 0, 4096, {}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_NE(store->save({.title = "t", .created = kNow}, "x", 6, 4096, fake_payload(5))
                .message()
                .find("payload holds 5 tokens"),
            std::string::npos);
  EXPECT_EQ(
      store->save({.title = std::string(1025, 't'), .created = kNow}, "x", 5, 4096, fake_payload(5))
          .code(),
      StatusCode::kInvalidArgument);
  auto small = store_options(tmp.path());
  small.max_file_bytes = 300;
  auto capped = SessionStore::open(small);
  EXPECT_EQ(
      capped->save({.title = "t", .created = kNow}, "x", 5, 4096, fake_payload(5, 400)).code(),
      StatusCode::kResourceExhausted);
  EXPECT_TRUE(store->list()->empty());
}

// A save whose payload is still being filled (ds4-agent's /save: the session's export beside the
// file's write) writes the file a save of the finished payload writes, byte for byte; a fill that
// fails, a filled payload of another token count, or a failing hook leave the previous file as it
// was and no temporary file.
TEST(SessionStore, ASaveBesideItsPayloadsFillWritesWhatTheFillProducesOrNothing) {
  TempDir plain_dir, tmp;
  const std::vector<uint8_t> want = real_payload(40);
  const SessionMeta meta{.title = "filled", .created = kNow - 7};
  const std::string name = session_id("filled", kNow - 7) + ".kv";
  auto plain = SessionStore::open(store_options(plain_dir.path()));
  ASSERT_TRUE(plain->save(meta, "the transcript", 40, 256, want).is_ok());
  // Fills `src` into the payload in 7 pieces, publishing each; fails after `fail_at` pieces.
  auto fill_from = [](const std::vector<uint8_t>& src, std::span<uint8_t> out, int fail_at = 8) {
    return [&src, out, fail_at](const std::function<void(size_t)>& publish) -> Status {
      const size_t piece = (src.size() + 6) / 7;
      for (size_t at = 0, i = 0; at < src.size(); at += piece, ++i) {
        if (static_cast<int>(i) == fail_at) return Status::io_error("the device went away");
        const size_t n = std::min(piece, src.size() - at);
        std::memcpy(out.data() + at, src.data() + at, n);
        publish(at + n);
      }
      return Status::ok();
    };
  };
  auto store = SessionStore::open(store_options(tmp.path()));
  std::vector<uint8_t> buf(want.size());
  ASSERT_TRUE(store->save(meta, "the transcript", 40, 256, buf, fill_from(want, buf)).is_ok());
  const std::vector<uint8_t> good = testing::read_all(tmp / name);
  EXPECT_EQ(good, testing::read_all(plain_dir / name));
  auto only_the_file = [&] {
    EXPECT_EQ(testing::read_all(tmp / name), good);
    size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(tmp.path())) {
      EXPECT_NE(e.path().filename().string()[0], '.') << e.path();
      ++files;
    }
    EXPECT_EQ(files, 1u);
  };
  // The fill fails halfway: its error, nothing changed.
  std::vector<uint8_t> other = real_payload(40);
  other.back() ^= 1;
  const Status failed =
      store->save(meta, "another transcript", 40, 256, buf, fill_from(other, buf, 3));
  EXPECT_EQ(failed.code(), StatusCode::kIoError);
  EXPECT_NE(failed.message().find("the device went away"), std::string::npos);
  only_the_file();
  // An empty payload whose fill fails: the write has nothing to wait for, and still no commit.
  EXPECT_EQ(store->save(meta, "x", 40, 256, {}, fill_from(other, {}, 0)).code(),
            StatusCode::kIoError);
  only_the_file();
  // The filled payload holds 39 tokens, the transcript 40.
  const std::vector<uint8_t> short_one = fake_payload(39), long_one = fake_payload(40);
  std::vector<uint8_t> fake(short_one.size());
  const Status counted = store->save(meta, "x", 40, 256, fake, fill_from(short_one, fake));
  EXPECT_NE(counted.message().find("payload holds 39 tokens"), std::string::npos)
      << counted.to_string();
  only_the_file();
  // A fill that throws: the write is stopped and joined, the exception goes on, nothing changed.
  EXPECT_THROW((void)store->save(meta, "x", 40, 256, fake,
                                 [](const std::function<void(size_t)>& publish) -> Status {
                                   publish(8);
                                   throw std::runtime_error("out of memory");
                                 }),
               std::runtime_error);
  only_the_file();
  // A hook that throws (a test's kill point) throws from save.
  auto throwing = store_options(tmp.path());
  throwing.write_hook = [](size_t, size_t) { throw std::runtime_error("killed"); };
  auto killed = SessionStore::open(throwing);
  EXPECT_THROW((void)killed->save(meta, "x", 40, 256, fake, fill_from(long_one, fake)),
               std::runtime_error);
  only_the_file();
}

// Everything else a user may keep in the directory: other models' and other quants' sessions, a
// damaged session, a KV cache file of ds4-server, the system-prompt checkpoint, stray files.
TEST(SessionStore, ListShowsThisModelsSessionsMostRecentlyUsedFirst) {
  TempDir tmp;
  uint64_t clock = kNow;
  auto opts = store_options(tmp.path());
  opts.now = [&clock] { return clock; };
  auto store = SessionStore::open(opts);
  ASSERT_TRUE(
      store->save({.title = "old", .created = kNow - 900}, "o", 5, 4096, fake_payload(5)).is_ok());
  clock += 10;
  ASSERT_TRUE(
      store->save({.title = "new", .created = kNow - 100}, "n", 6, 4096, fake_payload(6)).is_ok());
  clock += 10;
  ASSERT_TRUE(store->save({.title = "mid", .created = kNow - 500}, "m", 7, 4096, {}).is_ok());
  // Others.
  auto other_model = SessionStore::open(store_options(tmp.path(), "another model"));
  ASSERT_TRUE(other_model->save({.title = "theirs", .created = kNow}, "t", 5, 4096, fake_payload(5))
                  .is_ok());
  auto other_quant = SessionStore::open(store_options(tmp.path(), testing::kFingerprint, 4));
  ASSERT_TRUE(
      other_quant->save({.title = "q4", .created = kNow}, "q", 5, 4096, fake_payload(5)).is_ok());
  ASSERT_TRUE(store->save_system("system", 5, 4096, fake_payload(5)).is_ok());
  ASSERT_TRUE(
      store->save({.title = "broken", .created = kNow}, "b", 5, 4096, fake_payload(5)).is_ok());
  const std::string broken = tmp / (session_id("broken", kNow) + ".kv");
  std::filesystem::resize_file(broken, std::filesystem::file_size(broken) - 30);
  kv::KvcHeader cache_header{.reason = kv::SaveReason::kCold, .tokens = 5, .n_ctx = 4096};
  const std::string cache_name = session_id("cache", 1) + ".kv";
  testing::write_all(tmp / cache_name, kv::encode_kvc(cache_header, "<bos>", fake_payload(5), {}));
  testing::put_file(tmp / "notes.txt", "not a session");
  auto list = store->list();
  ASSERT_TRUE(list.is_ok()) << list.status().to_string();
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[0].title, "mid");
  EXPECT_TRUE((*list)[0].stripped);
  EXPECT_EQ((*list)[1].title, "new");
  EXPECT_EQ((*list)[2].title, "old");
  EXPECT_EQ((*list)[2].last_used, kNow);
  EXPECT_EQ((*list)[2].tokens, 5u);
  EXPECT_EQ((*list)[2].file_bytes, std::filesystem::file_size(tmp / ((*list)[2].id + ".kv")));
  // Loading "old" makes it the most recently used; nothing it skipped was deleted.
  clock += 100;
  ASSERT_TRUE(store->load((*list)[2].id).is_ok());
  list = store->list();
  EXPECT_EQ((*list)[0].title, "old");
  EXPECT_EQ((*list)[0].last_used, clock);
  for (const std::string& name :
       {broken, tmp / cache_name, tmp / "notes.txt", tmp / "sysprompt.kv",
        tmp / (session_id("theirs", kNow) + ".kv"), tmp / (session_id("q4", kNow) + ".kv")})
    EXPECT_TRUE(std::filesystem::exists(name)) << name;
  // The other models see their own.
  ASSERT_EQ(other_model->list()->size(), 1u);
  EXPECT_EQ((*other_model->list())[0].title, "theirs");
}

TEST(SessionStore, ResolveTakesAUniqueHexPrefix) {
  TempDir tmp;
  auto store = SessionStore::open(store_options(tmp.path()));
  // Titles chosen by their ids: two share the first hex digit.
  std::vector<std::string> ids;
  for (int i = 0; ids.size() < 3; ++i) {
    const std::string title = "session " + std::to_string(i);
    const std::string id = session_id(title, kNow);
    if (ids.size() == 2 && id[0] != ids[0][0]) continue;
    if (ids.size() == 1 && id[0] == ids[0][0]) continue;
    ASSERT_TRUE(store->save({.title = title, .created = kNow}, "t", 5, 4096, {}).is_ok());
    ids.push_back(id);
  }
  EXPECT_EQ(*store->resolve(ids[1].substr(0, 1)), ids[1]);
  EXPECT_EQ(*store->resolve(ids[0]), ids[0]);  // all 40 digits
  std::string upper = ids[2].substr(0, 10);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(*store->resolve(upper), ids[2]);
  auto ambiguous = store->resolve(ids[0].substr(0, 1));
  ASSERT_FALSE(ambiguous.is_ok());
  EXPECT_NE(ambiguous.status().message().find("2 sessions"), std::string::npos);
  EXPECT_NE(ambiguous.status().message().find(std::min(ids[0], ids[2]).substr(0, 12) + ", " +
                                              std::max(ids[0], ids[2]).substr(0, 12)),
            std::string::npos)
      << ambiguous.status().message();
  std::string none = ids[0];
  none[39] = none[39] == '0' ? '1' : '0';
  EXPECT_EQ(store->resolve(none).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->resolve("xyz").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->resolve("").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->resolve(ids[0] + "0").status().code(), StatusCode::kInvalidArgument);
  // A KV cache file with a matching name is not a session.
  const std::string cache = ids[1].substr(0, 39) + (ids[1][39] == 'f' ? "e" : "f");
  testing::write_all(tmp / (cache + ".kv"),
                     kv::encode_kvc({.tokens = 5}, "<bos>", fake_payload(5), {}));
  EXPECT_EQ(*store->resolve(ids[1].substr(0, 1)), ids[1]);
}

TEST(SessionStore, StripKeepsTheTextAndRemove) {
  TempDir tmp;
  auto store = SessionStore::open(store_options(tmp.path()));
  const SessionMeta meta{.title = "strip me", .created = kNow - 50};
  ASSERT_TRUE(store->save(meta, "the transcript", 40, 256, real_payload(40)).is_ok());
  const std::string id = session_id(meta.title, meta.created);
  const uint64_t full = std::filesystem::file_size(tmp / (id + ".kv"));
  std::string counted;
  ASSERT_TRUE(store
                  ->strip(id,
                          [&](std::string_view t) {
                            counted = t;
                            return 41u;
                          })
                  .is_ok());
  EXPECT_EQ(counted, "the transcript");
  EXPECT_LT(std::filesystem::file_size(tmp / (id + ".kv")), full);
  auto loaded = store->load(id);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_TRUE(loaded->payload.empty());
  EXPECT_TRUE(loaded->info.stripped);
  EXPECT_EQ(loaded->info.tokens, 41u);
  EXPECT_EQ(loaded->info.title, "strip me");
  EXPECT_EQ(loaded->info.created, kNow - 50);
  EXPECT_EQ(loaded->transcript, "the transcript");
  EXPECT_EQ(store->strip(id, [](std::string_view) { return 0u; }).code(),
            StatusCode::kInvalidArgument);
  // remove: the file goes; a second remove, a bad id and a KV cache file are refused.
  ASSERT_TRUE(store->remove(id).is_ok());
  EXPECT_FALSE(std::filesystem::exists(tmp / (id + ".kv")));
  EXPECT_EQ(store->remove(id).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->load(id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->remove("abc").code(), StatusCode::kInvalidArgument);
  const std::string cache = session_id("cache", 1);
  testing::write_all(tmp / (cache + ".kv"),
                     kv::encode_kvc({.tokens = 5}, "<bos>", fake_payload(5), {}));
  EXPECT_EQ(store->remove(cache).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(std::filesystem::exists(tmp / (cache + ".kv")));
}

TEST(SessionStore, SystemCheckpointIsReusedOnlyForTheSameTextModelAndContext) {
  TempDir tmp;
  auto store = SessionStore::open(store_options(tmp.path()));
  EXPECT_EQ(store->load_system("sys", 4096).status().code(), StatusCode::kNotFound);
  const std::vector<uint8_t> payload = real_payload(20);
  ASSERT_TRUE(store->save_system("<bos>the system prompt", 20, 256, payload).is_ok());
  EXPECT_TRUE(std::filesystem::exists(tmp / "sysprompt.kv"));
  auto got = store->load_system("<bos>the system prompt", 256);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(*got, payload);
  EXPECT_TRUE(store->load_system("<bos>the system prompt", 1024).is_ok());
  EXPECT_EQ(store->load_system("<bos>the system prompt", 128).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(store->load_system("<bos>another prompt", 256).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(SessionStore::open(store_options(tmp.path(), "other"))
                ->load_system("<bos>the system prompt", 256)
                .status()
                .code(),
            StatusCode::kNotFound);
  EXPECT_EQ(SessionStore::open(store_options(tmp.path(), testing::kFingerprint, 4))
                ->load_system("<bos>the system prompt", 256)
                .status()
                .code(),
            StatusCode::kNotFound);
  EXPECT_TRUE(store->list()->empty());
  // Damaged: an error with its reason, not a silent miss.
  auto bytes = testing::read_all(tmp / "sysprompt.kv");
  bytes[bytes.size() / 2] ^= 0x10;
  testing::write_all(tmp / "sysprompt.kv", bytes);
  auto damaged = store->load_system("<bos>the system prompt", 256);
  EXPECT_EQ(damaged.status().code(), StatusCode::kInvalidFile);
  EXPECT_NE(damaged.status().message().find("sysprompt.kv: KVC checksum mismatch"),
            std::string::npos)
      << damaged.status().message();
  EXPECT_EQ(store->save_system("x", 5, 256, {}).code(), StatusCode::kInvalidArgument);
}

TEST(SessionStore, DefaultDirectoryIsUnderHome) {
  const char* old = std::getenv("HOME");
  const std::string saved = old ? old : "";
  ::setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(default_session_dir(), "/home/someone/.ds4/kvcache");
  ::unsetenv("HOME");
  EXPECT_EQ(default_session_dir(), "./.ds4/kvcache");
  if (old) ::setenv("HOME", saved.c_str(), 1);
}

}  // namespace
}  // namespace ds4::agent
