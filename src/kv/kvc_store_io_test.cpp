// Protects: how the disk KV cache directory's files are written and read (features.md §3.1; issue
// 55 item 4): a file of many pieces hashed as it is read, by one thread or several; a large file
// written while helpers hash it and read by several threads; a payload another thread is still
// filling saved as it comes (or not at all when the producer fails); save_while_filling.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "gguf/test_util.h"
#include "kv/kvc_store.h"
#include "kv/kvc_store_test_util.h"

namespace ds4::kv {
namespace {

using gguf::testing::TempDir;
using testing::header;
using testing::options;
using testing::payload;

// A file of many read pieces, the last one short: read by one thread (hashed piece by piece as
// it is read) or by several side by side (3 and 7: ranges that end mid-file and a last one of a
// short piece), it loads (verified or framing only), and a flipped byte in its first, a middle or
// its last piece, or in its tool map, is caught.
TEST(KvcStore, AFileOfManyPiecesIsHashedAsItIsRead) {
  TempDir tmp;
  std::vector<std::string> logs;
  const std::string dir = tmp.file("kv");
  auto s = KvcStore::open(options(dir, 1 << 30, &logs));
  std::vector<uint8_t> big(21 * KvcStore::kReadPieceBytes + 12345);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  const std::vector<ToolMapEntry> map = {{"call_1", "<dsml>a block</dsml>"}};
  ASSERT_TRUE(s->save(header(9), "<bos>big", big, map).is_ok());
  const std::string path = dir + "/" + sha1_hex("<bos>big") + ".kv";
  const std::vector<uint8_t> file = gguf::testing::read_bytes(path);
  const size_t map_at = kvc_payload_offset(8) + big.size();
  for (const size_t threads : {size_t{1}, size_t{3}, size_t{7}}) {
    SCOPED_TRACE(threads);
    for (const bool verify : {true, false}) {
      auto r = KvcStore::read_file(path, 1 << 30, {}, {.verify = verify, .threads = threads});
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      EXPECT_TRUE(
          std::equal(r->view.payload.begin(), r->view.payload.end(), big.begin(), big.end()));
      EXPECT_EQ(r->view.tool_map, map);
    }
    for (const size_t at : {kvc_payload_offset(8) + 100, kvc_payload_offset(8) + big.size() / 2,
                            map_at - 1, map_at + 3}) {
      std::vector<uint8_t> f = file;
      f[at] ^= 0x80;
      const std::string damaged = dir + "/damaged";
      std::ofstream(damaged, std::ios::binary | std::ios::trunc)
          .write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size()));
      auto r = KvcStore::read_file(damaged, 1 << 30, {}, {.threads = threads});
      if (at < map_at) {
        ASSERT_FALSE(r.is_ok()) << at;
        EXPECT_NE(r.status().message().find("checksum mismatch"), std::string::npos) << at;
      } else {
        // A damaged tool map loses the map, not the file (features.md §3.1).
        ASSERT_TRUE(r.is_ok()) << at;
        EXPECT_TRUE(r->view.tool_map.empty()) << at;
      }
      EXPECT_TRUE(
          KvcStore::read_file(damaged, 1 << 30, {}, {.verify = false, .threads = threads}).is_ok())
          << at;
    }
  }
}

// A file of kParallelBytes or more is hashed by helpers as it is written and read by io_threads()
// threads (DS4_KVC_THREADS): the store saves it and loads it back whole.
TEST(KvcStore, ALargeFileIsWrittenAndReadByThreads) {
  TempDir tmp;
  std::vector<std::string> logs;
  const std::string dir = tmp.file("kv");
  auto s = KvcStore::open(options(dir, uint64_t{1} << 30, &logs));
  std::vector<uint8_t> big(KvcStore::kParallelBytes + 4321);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 40503u >> 7);
  setenv("DS4_KVC_THREADS", "3", 1);
  EXPECT_EQ(KvcStore::io_threads(), 3u);
  EXPECT_EQ(KvcStore::threads_for(KvcStore::kParallelBytes - 1), 1u);
  EXPECT_EQ(KvcStore::threads_for(KvcStore::kParallelBytes), 3u);
  ASSERT_TRUE(s->save(header(9), "<bos>large", big, {}).is_ok());
  const std::string path = dir + "/" + sha1_hex("<bos>large") + ".kv";
  const std::vector<uint8_t> file = gguf::testing::read_bytes(path);
  auto footer = decode_kvc_footer(std::span(file).last(kKvcFooterBytes));
  ASSERT_TRUE(footer.is_ok());
  EXPECT_EQ(kvc_checksums(file), *footer);
  auto r = KvcStore::read_file(path, uint64_t{1} << 30, {});
  unsetenv("DS4_KVC_THREADS");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(std::equal(r->view.payload.begin(), r->view.payload.end(), big.begin(), big.end()));
}

// A save whose payload another thread is still filling (a session's export beside the write): the
// file is the one a finished payload gives; a producer that fails leaves no file, no temporary
// file and no entry, and the files already there stay.
TEST(KvcStore, APayloadStillBeingFilledIsSavedAsItComesOrNotAtAll) {
  TempDir tmp;
  std::vector<std::string> logs;
  const std::string dir = tmp.file("kv");
  auto s = KvcStore::open(options(dir, uint64_t{1} << 30, &logs));
  ASSERT_TRUE(s->save(header(9), "<bos>before", payload(100), {}).is_ok());
  std::vector<uint8_t> want(KvcStore::kParallelBytes + 777);  // the threaded write path too
  for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<uint8_t>(i * 2654435761u >> 11);
  for (const char* threads : {"1", "3"}) {
    SCOPED_TRACE(threads);
    setenv("DS4_KVC_THREADS", threads, 1);
    std::vector<uint8_t> filling(want.size(), 0);
    base::ReadyBytes ready(filling.size());
    std::thread producer([&] {
      for (size_t at = 0; at < want.size(); at += size_t{3} << 20) {
        const size_t end = std::min(want.size(), at + (size_t{3} << 20));
        std::copy(want.begin() + at, want.begin() + end, filling.begin() + at);
        ready.publish(end);
      }
      ready.finish();
    });
    const std::string text = std::string("<bos>filled ") + threads;
    const Status st = s->save(header(9), text, filling, {}, &ready);
    producer.join();
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    auto r = KvcStore::read_file(dir + "/" + sha1_hex(text) + ".kv", uint64_t{1} << 30, {});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_TRUE(
        std::equal(r->view.payload.begin(), r->view.payload.end(), want.begin(), want.end()));

    base::ReadyBytes failing(want.size());
    std::thread quitter([&] {
      failing.publish(want.size() / 3);
      failing.fail();
    });
    const Status bad = s->save(header(9), "<bos>unfinished", want, {}, &failing);
    quitter.join();
    EXPECT_EQ(bad.code(), StatusCode::kUnavailable) << bad.to_string();
    // Every byte published, then a failure: no file either.
    base::ReadyBytes late(want.size());
    std::thread late_quitter([&] {
      late.publish(want.size());
      late.fail();
    });
    const Status late_bad = s->save(header(9), "<bos>failed late", want, {}, &late);
    late_quitter.join();
    EXPECT_EQ(late_bad.code(), StatusCode::kUnavailable) << late_bad.to_string();
  }
  unsetenv("DS4_KVC_THREADS");
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  std::vector<std::string> expect{sha1_hex("<bos>before") + ".kv",
                                  sha1_hex("<bos>filled 1") + ".kv",
                                  sha1_hex("<bos>filled 3") + ".kv"};
  std::sort(expect.begin(), expect.end());
  EXPECT_EQ(names, expect) << "no temporary or unfinished file is left";
  EXPECT_EQ(s->entries().size(), 3u);
}

// save_while_filling: the fill on the caller's thread, the write beside it; the fill's error wins
// and leaves no file, also when it comes after the fill's last byte.
TEST(KvcStore, SaveWhileFillingWritesWhatTheFillProduces) {
  TempDir tmp;
  std::vector<std::string> logs;
  const std::string dir = tmp.file("kv");
  auto s = KvcStore::open(options(dir, uint64_t{1} << 30, &logs));
  std::vector<uint8_t> want(5 << 20);
  for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<uint8_t>(i * 40503u >> 9);
  std::vector<uint8_t> buf(want.size(), 0x11);
  auto fill_until = [&](size_t stop) {
    return [&, stop](const std::function<void(size_t)>& ready) {
      for (size_t at = 0; at < want.size(); at += 100000) {
        if (at >= stop) return Status::io_error("the device went away");
        const size_t end = std::min(want.size(), at + 100000);
        std::copy(want.begin() + at, want.begin() + end, buf.begin() + at);
        ready(end);
      }
      return Status::ok();
    };
  };
  ASSERT_TRUE(
      save_while_filling(*s, header(9), "<bos>filled", buf, {}, fill_until(want.size())).is_ok());
  auto r = KvcStore::read_file(dir + "/" + sha1_hex("<bos>filled") + ".kv", uint64_t{1} << 30, {});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(std::equal(r->view.payload.begin(), r->view.payload.end(), want.begin(), want.end()));
  const Status bad = save_while_filling(*s, header(9), "<bos>broken", buf, {}, fill_until(2 << 20));
  EXPECT_EQ(bad.code(), StatusCode::kIoError) << bad.to_string();
  EXPECT_FALSE(std::filesystem::exists(dir + "/" + sha1_hex("<bos>broken") + ".kv"));
  const Status late = save_while_filling(*s, header(9), "<bos>late", buf, {},
                                         [&](const std::function<void(size_t)>& ready) {
                                           ready(want.size());
                                           return Status::io_error("failed after its last byte");
                                         });
  EXPECT_EQ(late.code(), StatusCode::kIoError) << late.to_string();
  EXPECT_FALSE(std::filesystem::exists(dir + "/" + sha1_hex("<bos>late") + ".kv"));
  EXPECT_EQ(s->entries().size(), 1u);
}

}  // namespace
}  // namespace ds4::kv
