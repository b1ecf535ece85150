// Protects: the KVC cache-file layout of spec/product.md "Disk KV Cache" (offsets and values of the
// 48-byte header written out by hand below, from the spec's table, not from the encoder) and the
// framing checks that keep a hostile or damaged file from being used: every case the issue names
// (truncated, bad magic, a header lying about sizes) fails with a clear error.
#include "kv/kvc_file.h"

#include <gtest/gtest.h>

#include <cstring>

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

const std::vector<uint8_t> kPayload = {'D', 'S', 'V', '4', 1, 2, 3, 4, 5};
const std::vector<ToolMapEntry> kMap = {{"call_abc", "<｜DSML｜tool_calls>x</｜DSML｜tool_calls>"},
                                        {"call_d", "y"}};

TEST(KvcFile, HeaderBytesFollowTheSpecTable) {
  KvcHeader h = header();
  h.payload_bytes = 0x0102030405060708ull;
  const std::vector<uint8_t> b = encode_kvc_header(h);
  ASSERT_EQ(b.size(), 48u);
  const uint8_t want[48] = {
      'K',  'V',  'C',  1,    2, 2, 0, 0,   // magic, version, bits, reason
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
    EXPECT_EQ(f.size(), 48 + 4 + 31 + kPayload.size() +
                            (with_map ? 8 + 8 + kMap[0].id.size() + kMap[0].dsml.size() + 8 +
                                            kMap[1].id.size() + kMap[1].dsml.size()
                                      : 0));
    auto v = decode_kvc(f);
    ASSERT_TRUE(v.is_ok()) << v.status().to_string();
    EXPECT_EQ(v->header.tokens, 7u);
    EXPECT_EQ(v->header.payload_bytes, kPayload.size());
    EXPECT_EQ((v->header.flags & kKvcToolMapFlag) != 0, with_map);
    EXPECT_EQ(v->text, text);
    EXPECT_TRUE(std::equal(v->payload.begin(), v->payload.end(), kPayload.begin(), kPayload.end()));
    EXPECT_EQ(v->tool_map, with_map ? kMap : std::vector<ToolMapEntry>{});
    EXPECT_TRUE(v->tool_map_error.empty());
  }
}

std::string error_of(const std::vector<uint8_t>& f) {
  auto v = decode_kvc(f);
  return v.is_ok() ? "" : v.status().message();
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
  EXPECT_NE(with(3, 2).find("version 2"), std::string::npos);
  EXPECT_NE(with(4, 3).find("quant bits 3"), std::string::npos);
  EXPECT_NE(with(5, 9).find("save reason 9"), std::string::npos);
  EXPECT_NE(with(6, 0x08).find("0x08"), std::string::npos);
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
  std::vector<uint8_t> trailing = good;
  trailing.push_back(0);
  EXPECT_NE(error_of(trailing).find("1 bytes follow the KVC payload"), std::string::npos);
  // Truncated anywhere: never accepted.
  for (size_t n = 0; n < good.size(); ++n)
    EXPECT_FALSE(decode_kvc({good.begin(), good.begin() + static_cast<long>(n)}).is_ok()) << n;
}

TEST(KvcFile, MalformedToolMapKeepsTheEntriesBeforeIt) {
  const std::vector<uint8_t> good = encode_kvc(header(), "text", kPayload, kMap);
  // Cut inside the second entry.
  const std::vector<uint8_t> cut(good.begin(), good.end() - 1);
  auto v = decode_kvc(cut);
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_EQ(v->tool_map, std::vector<ToolMapEntry>{kMap[0]});
  EXPECT_NE(v->tool_map_error.find("entry 1 of 2"), std::string::npos) << v->tool_map_error;
  // A flag with no section, and an entry count beyond the bound.
  const std::vector<uint8_t> plain = encode_kvc(header(), "text", kPayload, {});
  std::vector<uint8_t> flagged = plain;
  flagged[6] |= kKvcToolMapFlag;
  auto w = decode_kvc(flagged);
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

}  // namespace
}  // namespace ds4::kv
