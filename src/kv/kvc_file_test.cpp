// Protects: the KVC cache-file layout of spec/product.md "Disk KV Cache" (offsets and values of the
// 48-byte header written out by hand below, from the spec's table, not from the encoder; version 2
// is ours: the spec's version 1 plus the checksum footer) and every check that keeps a hostile or
// damaged file from being used: the framing cases the issue names (truncated, bad magic, a header
// lying about sizes) and, through the checksums, any change to the header's fixed fields, the
// text or the payload (a flipped bit, a NaN written into the floats, another token count), while
// the bookkeeping fields the store rewrites in place stay free; a version-1 file is refused by
// name.
#include "kv/kvc_file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <utility>

namespace ds4::kv {
namespace {

KvcHeader header() {
  KvcHeader h;
  h.quant_bits = 2;
  h.reason = SaveReason::kContinued;
  h.tokens = 7;
  h.hits = 3;
  h.n_ctx = 32768;
  h.created = 1764576000;
  h.last_used = 1764579600;
  return h;
}

const std::vector<uint8_t> kPayload = {'D', 'S', 'V', '4', 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
const std::vector<ToolMapEntry> kMap = {{"call_abc", "<｜DSML｜tool_calls>x</｜DSML｜tool_calls>"},
                                        {"call_d", "y"}};

TEST(KvcFile, HeaderBytesFollowTheSpecTable) {
  KvcHeader h = header();
  h.payload_bytes = 0x0102030405060708ull;
  const std::vector<uint8_t> b = encode_kvc_header(h);
  ASSERT_EQ(b.size(), 48u);
  const uint8_t want[48] = {
      'K',  'V',  'C',  2,    2, 2, 0, 0,   // magic, version 2 (ours), bits, reason
      7,    0,    0,    0,    3, 0, 0, 0,   // tokens, hits
      0x00, 0x80, 0,    0,    2, 0, 0, 0,   // context 32768, payload ABI 2
      0x00, 0x4b, 0x2d, 0x69, 0, 0, 0, 0,   // created 1764576000 = 0x692d4b00
      0x10, 0x59, 0x2d, 0x69, 0, 0, 0, 0,   // last used 1764579600 = 0x692d5910
      8,    7,    6,    5,    4, 3, 2, 1};  // payload bytes
  EXPECT_EQ(0, std::memcmp(b.data(), want, 48));
}

TEST(KvcFile, RoundTripWithAndWithoutToolMap) {
  for (const bool with_map : {false, true}) {
    const auto map =
        with_map ? std::span<const ToolMapEntry>(kMap) : std::span<const ToolMapEntry>();
    const std::string text = "<｜begin▁of▁sentence｜>hi";  // 31 bytes of UTF-8
    ASSERT_EQ(text.size(), 31u);
    const std::vector<uint8_t> f = encode_kvc(header(), text, kPayload, map);
    const size_t map_bytes = with_map ? 8 + 8 + kMap[0].id.size() + kMap[0].dsml.size() + 8 +
                                            kMap[1].id.size() + kMap[1].dsml.size()
                                      : 0;
    ASSERT_EQ(f.size(), 48 + 4 + 31 + kPayload.size() + map_bytes + 24);
    // The footer: "KSUM", zero, then the checksums of bytes 0 .. the payload's end (hits and last
    // use as zero) and of the KTM section, each seeded with its own constant.
    const size_t footer = f.size() - 24;
    EXPECT_EQ(0, std::memcmp(f.data() + footer, "KSUM\0\0\0\0", 8));
    std::vector<uint8_t> body(f.begin(), f.begin() + 48 + 4 + 31 + kPayload.size());
    std::memset(body.data() + 12, 0, 4);
    std::memset(body.data() + 32, 0, 8);
    const std::span<const uint8_t> section(f.data() + footer - map_bytes, map_bytes);
    uint64_t stored_body, stored_map;
    std::memcpy(&stored_body, f.data() + footer + 8, 8);
    std::memcpy(&stored_map, f.data() + footer + 16, 8);
    EXPECT_EQ(stored_body, base::checksum64(body, kKvcBodySeed));
    EXPECT_EQ(stored_map, base::checksum64(section, kKvcToolMapSeed));
    auto v = decode_kvc(f);
    ASSERT_TRUE(v.is_ok()) << v.status().to_string();
    EXPECT_EQ(v->header.tokens, 7u);
    EXPECT_EQ(v->header.payload_bytes, kPayload.size());
    EXPECT_EQ((v->header.flags & kKvcToolMapFlag) != 0, with_map);
    EXPECT_EQ(v->text, text);
    EXPECT_TRUE(std::equal(v->payload.begin(), v->payload.end(), kPayload.begin(), kPayload.end()));
    EXPECT_EQ(v->tool_map, with_map ? kMap : std::vector<ToolMapEntry>{});
    EXPECT_TRUE(v->tool_map_error.empty());
    EXPECT_EQ(v->checksums, kvc_checksums(f));
    // Re-encoding the decoded file gives the same bytes.
    EXPECT_EQ(encode_kvc(v->header, v->text, v->payload, v->tool_map), f);
  }
}

// ds4-agent's session files: flag bit 3 (the text is an agent record) and the two agent save
// reasons are known to this version, so such a file decodes (the agent checks its record).
TEST(KvcFile, AgentFlagAndReasonsDecode) {
  for (const SaveReason r : {SaveReason::kAgentSession, SaveReason::kAgentSystem}) {
    KvcHeader h = header();
    h.reason = r;
    h.flags = kKvcAgentFlag;
    const std::vector<uint8_t> f = encode_kvc(h, "ds4-agent-session 1\n{}\n", kPayload, {});
    EXPECT_EQ(f[6], 0x08);
    auto v = decode_kvc(f);
    ASSERT_TRUE(v.is_ok()) << v.status().to_string();
    EXPECT_EQ(v->header.reason, r);
    EXPECT_EQ(v->header.flags, kKvcAgentFlag);
  }
}

std::string error_of(const std::vector<uint8_t>& f) {
  auto v = decode_kvc(f);
  return v.is_ok() ? "" : v.status().message();
}

// `f` (a whole file) with its footer's checksums made right for its bytes, as a writer that
// computed them over damaged or hand-made bytes would leave it.
std::vector<uint8_t> reseal(std::vector<uint8_t> f) {
  const KvcChecksums sums = kvc_checksums(f);
  std::memcpy(f.data() + f.size() - 16, &sums.body, 8);
  std::memcpy(f.data() + f.size() - 8, &sums.tool_map, 8);
  return f;
}

TEST(KvcFile, DamagedFramingIsRefused) {
  const std::vector<uint8_t> good = encode_kvc(header(), "text", kPayload, {});
  auto with = [&](size_t at, uint8_t value) {
    std::vector<uint8_t> f = good;
    f[at] = value;
    return error_of(f);
  };
  EXPECT_NE(error_of({good.begin(), good.begin() + 47}).find("header"), std::string::npos);
  EXPECT_NE(with(0, 'X').find("magic"), std::string::npos);
  EXPECT_NE(with(3, 0).find("KVC version 0, this build reads version 2"), std::string::npos);
  EXPECT_NE(with(3, 3).find("version 3 is newer"), std::string::npos);
  EXPECT_EQ(decode_kvc_header(std::vector<uint8_t>(good.begin(), good.begin() + 48)).is_ok(), true);
  std::vector<uint8_t> newer = good;
  newer[3] = 3;
  EXPECT_EQ(decode_kvc_header(newer).status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(with(4, 3).find("quant bits 3"), std::string::npos);
  EXPECT_NE(with(5, 7).find("save reason 7"), std::string::npos);
  EXPECT_NE(with(6, 0x10).find("0x10"), std::string::npos);
  EXPECT_NE(with(7, 2).find("model id 2"), std::string::npos);
  EXPECT_NE(with(20, 1).find("ABI 1"), std::string::npos);
  EXPECT_NE(with(22, 1).find("reserved"), std::string::npos);
  std::vector<uint8_t> zero_tokens = good;
  std::memset(zero_tokens.data() + 8, 0, 4);
  EXPECT_NE(error_of(zero_tokens).find("0 tokens"), std::string::npos);
  // A header lying about sizes: text longer than the file, payload longer than what is left.
  EXPECT_NE(with(48, 0xff).find("cache text of 255 bytes"), std::string::npos);
  EXPECT_NE(with(40, 0xff).find("payload of 255 bytes"), std::string::npos);
  std::vector<uint8_t> huge = good;
  std::memset(huge.data() + 40, 0xff, 8);
  EXPECT_NE(error_of(huge).find("payload of 18446744073709551615 bytes"), std::string::npos);
  // Bytes between the payload and the footer without a tool-id map; bytes after the footer.
  std::vector<uint8_t> between = good;
  between.insert(between.end() - 24, 0);
  EXPECT_NE(error_of(reseal(between)).find("1 bytes follow the KVC payload"), std::string::npos);
  std::vector<uint8_t> trailing = good;
  trailing.push_back(0);
  EXPECT_NE(error_of(trailing).find("footer is missing"), std::string::npos);
  // The footer's own bytes.
  EXPECT_NE(with(good.size() - 24, 'X').find("footer is missing"), std::string::npos);
  EXPECT_NE(with(good.size() - 20, 1).find("footer bytes 4-7"), std::string::npos);
  // Truncated anywhere: never accepted.
  for (size_t n = 0; n < good.size(); ++n)
    EXPECT_FALSE(decode_kvc({good.begin(), good.begin() + static_cast<long>(n)}).is_ok()) << n;
}

// A version-1 file (the spec's layout: no footer) is refused by its version, never read as
// version 2: not even as a file whose footer is missing.
TEST(KvcFile, AVersionOneFileIsRefusedByName) {
  std::vector<uint8_t> v1 = encode_kvc(header(), "text", kPayload, kMap);
  v1.resize(v1.size() - 24);
  v1[3] = 1;
  const auto v = decode_kvc(v1);
  ASSERT_FALSE(v.is_ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidFile);
  EXPECT_NE(v.status().message().find("KVC version 1, a file from before payload checksums"),
            std::string::npos)
      << v.status().message();
  EXPECT_FALSE(decode_kvc_header(v1).is_ok());
}

// Every byte the checksums cover: one flipped bit anywhere in the header's fixed fields, the text
// length, the text or the payload makes the file fail its checksum (or an earlier check); in the
// tool-id map it drops the map; only the hit count and last use, which the store rewrites in
// place, may change.
TEST(KvcFile, TheChecksumsCoverEveryByteButTheBookkeeping) {
  const std::vector<uint8_t> good = encode_kvc(header(), "text", kPayload, kMap);
  const size_t payload_end = 48 + 4 + 4 + kPayload.size();
  const size_t footer = good.size() - 24;
  for (size_t at = 0; at < good.size(); ++at) {
    std::vector<uint8_t> f = good;
    f[at] ^= 0x10;
    const auto v = decode_kvc(f);
    const bool bookkeeping = (at >= 12 && at < 16) || (at >= 32 && at < 40);
    if (bookkeeping) {
      ASSERT_TRUE(v.is_ok()) << at << ": " << v.status().to_string();
      EXPECT_TRUE(v->tool_map_error.empty()) << at;
    } else if (at < payload_end || (at >= footer && at < footer + 16)) {
      EXPECT_FALSE(v.is_ok()) << at;
    } else {  // the map or its checksum: the file loads without its map
      ASSERT_TRUE(v.is_ok()) << at << ": " << v.status().to_string();
      EXPECT_TRUE(v->tool_map.empty()) << at;
      EXPECT_FALSE(v->tool_map_error.empty()) << at;
    }
  }
  // Changes a writer's bug or a disk could make that keep the framing sound: a NaN written over
  // four payload bytes, another token count in the header.
  std::vector<uint8_t> nan = good;
  const float q = std::nanf("");
  std::memcpy(nan.data() + 48 + 4 + 4 + 8, &q, 4);
  EXPECT_NE(error_of(nan).find("checksum mismatch"), std::string::npos) << error_of(nan);
  std::vector<uint8_t> tokens = good;
  tokens[8] += 1;
  EXPECT_NE(error_of(tokens).find("checksum mismatch"), std::string::npos);
  // The message names the stored and the computed sums.
  EXPECT_NE(error_of(tokens).find("stored "), std::string::npos);
}

// A reader that hashes a file in pieces as it reads them gets the one-shot sums, whatever the
// pieces; decode_kvc takes them instead of hashing again.
TEST(KvcFile, TheHasherTakesAnyPieces) {
  std::vector<uint8_t> payload(300000);
  std::mt19937 rng(1);
  for (auto& b : payload) b = static_cast<uint8_t>(rng());
  const std::vector<uint8_t> f = encode_kvc(header(), "some text", payload, kMap);
  const KvcChecksums want = kvc_checksums(f);
  for (const size_t piece : {size_t{1}, size_t{7}, size_t{52}, size_t{65536}, size_t{262144}}) {
    KvcHasher h(f.size());
    for (size_t at = 0; at < f.size(); at += piece) {
      h.update(std::span<const uint8_t>(f).subspan(at, std::min(piece, f.size() - at)));
    }
    EXPECT_EQ(h.sums(), want) << piece;
  }
  auto v = decode_kvc(f, {}, &want);
  ASSERT_TRUE(v.is_ok());
  const KvcChecksums wrong{.body = want.body + 1, .tool_map = want.tool_map};
  EXPECT_NE(decode_kvc(f, {}, &wrong).status().message().find("checksum mismatch"),
            std::string::npos);
}

// The body's blocks hashed apart, in pieces of odd sizes and out of order (as the readers of
// several threads hash them), give the sums of update(): payloads ending inside the first block,
// on a block boundary and past several; with and without a tool map; and a file that is not a
// KVC file at all (its lead's lengths are garbage: nothing is hashed apart).
TEST(KvcFile, BlocksHashedApartGiveTheSameSums) {
  const size_t block = base::kChecksumBlockBytes;
  std::mt19937 rng(3);
  for (const size_t n : {size_t{100}, block - 200, 4 * block, 9 * block + 4321}) {
    std::vector<uint8_t> payload(n);
    for (auto& b : payload) b = static_cast<uint8_t>(rng());
    std::vector<std::vector<uint8_t>> files = {encode_kvc(header(), "some text", payload, kMap),
                                               encode_kvc(header(), "t", payload, {}), payload};
    for (const std::vector<uint8_t>& f : files) {
      const KvcChecksums want = kvc_checksums(f);
      for (const size_t lead : {block, 3 * block, size_t{2 * block + 7}}) {
        SCOPED_TRACE(::testing::Message() << n << " bytes, lead " << lead);
        const std::span<const uint8_t> file(f);
        KvcHasher h(f.size());
        h.update(file.first(std::min(f.size(), lead)));
        const KvcHasher::Range r = h.apart();
        EXPECT_EQ(r.begin, h.at());
        if (r.blocks() > 0) {
          EXPECT_EQ(h.at() % block, 0u);
        }
        // Pieces of 1.5 blocks from the end back to the lead: each block hashed where it lies
        // whole in a piece; the blocks cut by two pieces by a second pass of whole blocks.
        std::vector<uint64_t> digests(r.blocks(), 0);
        for (uint64_t end = f.size(); end > h.at();) {
          const uint64_t begin =
              std::max<uint64_t>(h.at(), end > block * 3 / 2 ? end - block * 3 / 2 : 0);
          h.hash_apart(begin, file.subspan(begin, end - begin), digests);
          end = begin;
        }
        for (uint64_t o = r.begin; o < r.end; o += 2 * block) {
          if (digests[(o - r.begin) / block] == 0) h.hash_apart(o, file.subspan(o, block), digests);
        }
        for (uint64_t o = r.begin + block; o < r.end; o += 2 * block) {
          if (digests[(o - r.begin) / block] == 0) h.hash_apart(o, file.subspan(o, block), digests);
        }
        h.add_apart(digests);
        EXPECT_EQ(h.at(), r.end);
        h.update(file.subspan(h.at()));
        EXPECT_EQ(h.sums(), want);
      }
    }
  }
}

// KvcWriter::stream with helpers hashing the payload writes the bytes of the one-thread stream;
// a put that fails mid-payload ends it with that error (the helpers stopped and joined).
TEST(KvcFile, HelpersHashingTheStreamGiveTheSameFile) {
  const size_t block = base::kChecksumBlockBytes;
  std::mt19937 rng(5);
  for (const size_t n : {size_t{10}, 3 * block, 17 * block + 999}) {
    std::vector<uint8_t> payload(n);
    for (auto& b : payload) b = static_cast<uint8_t>(rng());
    for (const std::string& text : {std::string("a text"), std::string(block + 5, 'x')}) {
      const std::vector<uint8_t> want = encode_kvc(header(), text, payload, kMap);
      for (const size_t threads : {size_t{2}, size_t{3}, size_t{8}}) {
        SCOPED_TRACE(::testing::Message()
                     << n << " bytes, text " << text.size() << ", " << threads << " threads");
        KvcWriter w(header(), text, payload.size(), kMap);
        std::vector<uint8_t> got;
        ASSERT_TRUE(w.stream(
                         payload,
                         [&](std::span<const uint8_t> b) {
                           got.insert(got.end(), b.begin(), b.end());
                           return Status::ok();
                         },
                         threads)
                        .is_ok());
        EXPECT_EQ(got, want);
        KvcWriter failing(header(), text, payload.size(), kMap);
        int puts = 0;
        const Status st = failing.stream(
            payload,
            [&](std::span<const uint8_t>) {
              return ++puts == 2 ? Status::io_error("disk full") : Status::ok();
            },
            threads);
        EXPECT_EQ(st.code(), StatusCode::kIoError);
        EXPECT_EQ(puts, 2);
      }
    }
  }
}

// A payload still being filled by another thread (a session's export) streams as it is published:
// the same file as from a finished payload, with one or several hashing threads (a part read
// before it was published would still hold the 0xEE filler, and its bytes and sums would differ).
// A producer that fails stops the stream with unavailable, whatever threads wait, also after it
// published every byte: the file's tail waits for the producer's finish.
TEST(KvcFile, APayloadStillBeingFilledStreamsAsItIsPublished) {
  const size_t block = base::kChecksumBlockBytes;
  std::mt19937 rng(9);
  const size_t n = 9 * block + 12345;  // several 256 KiB pieces and checksum blocks
  std::vector<uint8_t> final_bytes(n);
  for (auto& b : final_bytes) b = static_cast<uint8_t>(rng());
  const std::vector<uint8_t> want = encode_kvc(header(), "a text", final_bytes, kMap);
  for (const size_t threads : {size_t{1}, size_t{3}}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads");
    std::vector<uint8_t> payload(n, 0xEE);  // filled part by part below
    base::ReadyBytes ready(n);
    std::thread producer([&] {
      for (size_t at = 0; at < n; at += 40000) {
        const size_t end = std::min(n, at + 40000);
        std::copy(final_bytes.begin() + at, final_bytes.begin() + end, payload.begin() + at);
        ready.publish(end);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      ready.finish();
    });
    KvcWriter w(header(), "a text", n, kMap);
    std::vector<uint8_t> got;
    const Status st = w.stream(
        payload,
        [&](std::span<const uint8_t> b) {
          got.insert(got.end(), b.begin(), b.end());
          return Status::ok();
        },
        threads, &ready);
    producer.join();
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ(got, want);

    // A producer that publishes `published` bytes, then fails: the stream's status and the bytes
    // it handed over.
    auto fail_after = [&](size_t published) {
      base::ReadyBytes failing(n);
      std::thread quitter([&] {
        failing.publish(published);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        failing.fail();
      });
      KvcWriter w2(header(), "a text", n, kMap);
      size_t handed = 0;
      const Status st2 = w2.stream(
          final_bytes,
          [&](std::span<const uint8_t> b) {
            handed += b.size();
            return Status::ok();
          },
          threads, &failing);
      quitter.join();
      return std::pair{st2, handed};
    };
    const auto [st2, handed] = fail_after(3 * block);
    EXPECT_EQ(st2.code(), StatusCode::kUnavailable) << st2.to_string();
    EXPECT_LT(handed, n);  // the tail never went out
    // Every byte published, then a failure: the payload goes out, the file's tail does not.
    const auto [st3, handed3] = fail_after(n);
    EXPECT_EQ(st3.code(), StatusCode::kUnavailable) << st3.to_string();
    EXPECT_LT(handed3, want.size());
  }
}

TEST(KvcFile, MalformedToolMapKeepsTheEntriesBeforeIt) {
  const std::vector<uint8_t> good = encode_kvc(header(), "text", kPayload, kMap);
  // Cut inside the second entry (the footer resealed over the shorter map).
  std::vector<uint8_t> cut = good;
  cut.erase(cut.end() - 25);
  auto v = decode_kvc(reseal(cut));
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_EQ(v->tool_map, std::vector<ToolMapEntry>{kMap[0]});
  EXPECT_NE(v->tool_map_error.find("entry 1 of 2"), std::string::npos) << v->tool_map_error;
  // A flag with no section, and an entry count beyond the bound.
  const std::vector<uint8_t> plain = encode_kvc(header(), "text", kPayload, {});
  std::vector<uint8_t> flagged = plain;
  flagged[6] |= kKvcToolMapFlag;
  auto w = decode_kvc(reseal(flagged));
  ASSERT_TRUE(w.is_ok());
  EXPECT_TRUE(w->tool_map.empty());
  EXPECT_NE(w->tool_map_error.find("KTM"), std::string::npos);
  auto x = decode_kvc(good, KvcLimits{.max_tool_ids = 0});
  ASSERT_TRUE(x.is_ok());
  EXPECT_NE(x->tool_map_error.find("claims 2 entries"), std::string::npos);
  // An id longer than 256 bytes is malformed.
  const std::vector<ToolMapEntry> long_id = {{std::string(257, 'a'), "z"}};
  auto y = decode_kvc(encode_kvc(header(), "t", kPayload, long_id));
  ASSERT_TRUE(y.is_ok());
  EXPECT_TRUE(y->tool_map.empty());
  EXPECT_FALSE(y->tool_map_error.empty());
}

// The trailer alone (what the tool-id restore reads): its entries when sound, none when the map
// or the footer is damaged.
TEST(KvcFile, TheTrailerIsCheckedAlone) {
  const std::vector<uint8_t> f = encode_kvc(header(), "text", kPayload, kMap);
  const size_t at = 48 + 4 + 4 + kPayload.size();
  std::vector<uint8_t> trailer(f.begin() + static_cast<long>(at), f.end());
  std::string error;
  EXPECT_EQ(decode_kvc_trailer(trailer, {}, &error), kMap);
  EXPECT_TRUE(error.empty()) << error;
  trailer[20] ^= 1;  // inside the first entry's id
  EXPECT_TRUE(decode_kvc_trailer(trailer, {}, &error).empty());
  EXPECT_NE(error.find("checksum"), std::string::npos) << error;
  error.clear();
  EXPECT_TRUE(decode_kvc_trailer(std::span(trailer).first(10), {}, &error).empty());
  EXPECT_FALSE(error.empty());
}

}  // namespace
}  // namespace ds4::kv
