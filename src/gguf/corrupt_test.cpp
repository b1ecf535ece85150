// Protects: the reader's behaviour on hostile files. Each case is a distinct way a GGUF can be
// broken; each must produce a Status (never a crash or an out-of-bounds read -- the ASan build runs
// these too) whose message names the problem. A valid baseline proves the builders are right.
#include <gtest/gtest.h>

#include <string>

#include "gguf/reader.h"
#include "gguf/test_util.h"

namespace ds4::gguf {
namespace {

using testing::Bytes;

// A valid file: one u32 key and one 8-element f32 tensor.
Bytes valid_file() {
  Bytes b;
  b.header(1, 1).kv_u32("k", 7).tensor("t", 8, 0, 0).pad_to(32).zeros(32);
  return b;
}

struct Case {
  const char* name;
  Bytes bytes;
  const char* expect;  // substring of the error message
};

Status parse(const Bytes& b) {
  auto r = Reader::parse(b.bytes());
  return r.is_ok() ? Status::ok() : r.status();
}

TEST(GgufCorrupt, BaselineIsValid) {
  const Bytes b = valid_file();
  auto r = Reader::parse(b.bytes());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(*r->get_u32("k"), 7u);
  EXPECT_EQ(r->tensors()[0].n_bytes, 32u);
}

TEST(GgufCorrupt, EveryHostileFileIsRejectedWithAReason) {
  std::vector<Case> cases;
  cases.push_back({"empty file", Bytes(), "too small for a GGUF header"});
  cases.push_back({"truncated header", Bytes().header(0, 0).raw("").zeros(0), ""});
  cases.back().bytes = Bytes().put<uint32_t>(0x46554747).put<uint32_t>(3).put<uint64_t>(0);
  cases.back().expect = "too small";
  cases.push_back({"bad magic",
                   Bytes().raw("GGML").put<uint32_t>(3).put<uint64_t>(0).put<uint64_t>(0),
                   "bad magic"});
  cases.push_back({"version 2", Bytes().header(0, 0, 2), "unsupported GGUF version 2"});
  cases.push_back({"absurd kv count", Bytes().header(0, uint64_t{1} << 60), "metadata count"});
  cases.push_back({"absurd tensor count", Bytes().header(uint64_t{1} << 40, 0), "tensor count"});
  cases.push_back({"key longer than file",
                   Bytes().header(0, 1).put<uint64_t>(1000).raw("abc").zeros(11),
                   "claims 1000 bytes"});
  cases.push_back({"empty key",
                   Bytes().header(0, 1).str("").put<uint32_t>(0).put<uint8_t>(1).zeros(8),
                   "is empty"});
  cases.push_back({"key not utf-8",
                   Bytes().header(0, 1).str("bad\xc3\x28key").put<uint32_t>(4).put<uint32_t>(1),
                   "not valid UTF-8"});
  cases.push_back({"overlong utf-8 key",
                   Bytes().header(0, 1).str("\xc0\xafkey").put<uint32_t>(4).put<uint32_t>(1),
                   "not valid UTF-8"});
  cases.push_back({"duplicate key", Bytes().header(0, 2).kv_u32("k", 1).kv_u32("k", 2),
                   "duplicate metadata key 'k'"});
  cases.push_back({"unknown value type",
                   Bytes().header(0, 1).str("k").put<uint32_t>(13).put<uint32_t>(0).zeros(8),
                   "unknown value type 13"});
  cases.push_back({"truncated value",
                   Bytes().header(0, 1).str("k").put<uint32_t>(10).put<uint32_t>(0), "truncated"});
  cases.push_back({"bool not 0/1",
                   Bytes().header(0, 1).str("k").put<uint32_t>(7).put<uint8_t>(2).zeros(8),
                   "must be 0 or 1"});
  cases.push_back(
      {"string longer than file",
       Bytes().header(0, 1).str("k").put<uint32_t>(8).put<uint64_t>(uint64_t{1} << 62).zeros(4),
       "remain in the file"});
  cases.push_back({"array count absurd",
                   Bytes()
                       .header(0, 1)
                       .str("k")
                       .put<uint32_t>(9)
                       .put<uint32_t>(4)
                       .put<uint64_t>(uint64_t{1} << 61)
                       .zeros(16),
                   "more than the"});
  cases.push_back(
      {"array of unknown type",
       Bytes().header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(99).put<uint64_t>(1).zeros(8),
       "unknown element type 99"});
  {
    Bytes deep;
    deep.header(0, 1).str("k").put<uint32_t>(9);
    for (int i = 0; i < 12; ++i) deep.put<uint32_t>(9).put<uint64_t>(1);
    deep.put<uint32_t>(0).put<uint64_t>(0);
    cases.push_back({"arrays nested too deep", deep, "nested deeper"});
  }
  cases.push_back({"alignment not power of two",
                   Bytes().header(0, 1).kv_u32("general.alignment", 24),
                   "general.alignment must be"});
  cases.push_back(
      {"alignment wrong type",
       Bytes().header(0, 1).str("general.alignment").put<uint32_t>(10).put<uint64_t>(32),
       "general.alignment must be"});
  cases.push_back(
      {"tensor with zero dims",
       Bytes().header(1, 0).str("t").put<uint32_t>(0).put<uint32_t>(0).put<uint64_t>(0).zeros(16),
       "has 0 dimensions"});
  cases.push_back({"tensor with 9 dims", Bytes().header(1, 0).str("t").put<uint32_t>(9).zeros(96),
                   "has 9 dimensions"});
  cases.push_back({"tensor dim zero",
                   Bytes().header(1, 0).tensor("t", 0, 0, 0).pad_to(32).zeros(32),
                   "dimension 0 is zero"});
  {
    Bytes b;
    b.header(1, 0)
        .str("t")
        .put<uint32_t>(2)
        .put<uint64_t>(uint64_t{1} << 40)
        .put<uint64_t>(uint64_t{1} << 40)
        .put<uint32_t>(0)
        .put<uint64_t>(0)
        .pad_to(32);
    cases.push_back({"element count overflow", b, "overflows"});
  }
  cases.push_back({"unknown tensor type",
                   Bytes().header(1, 0).tensor("t", 8, 4, 0).pad_to(32).zeros(32),
                   "unknown type id 4"});
  cases.push_back({"row not whole blocks",
                   Bytes().header(1, 0).tensor("t", 33, 8, 0).pad_to(32).zeros(64),
                   "not a multiple of the q8_0 block"});
  cases.push_back({"tensor name not utf-8",
                   Bytes().header(1, 0).tensor("\xff", 8, 0, 0).pad_to(32).zeros(32),
                   "not valid UTF-8"});
  cases.push_back(
      {"duplicate tensor",
       Bytes().header(2, 0).tensor("t", 8, 0, 0).tensor("t", 8, 0, 32).pad_to(32).zeros(64),
       "duplicate tensor name 't'"});
  cases.push_back({"misaligned tensor offset",
                   Bytes().header(1, 0).tensor("t", 8, 0, 4).pad_to(32).zeros(64),
                   "not a multiple of the alignment"});
  cases.push_back({"tensor past end of file",
                   Bytes().header(1, 0).tensor("t", 8, 0, 0).pad_to(32).zeros(31),
                   "extends past the end"});
  cases.push_back({"tensor offset absurd",
                   Bytes().header(1, 0).tensor("t", 8, 0, uint64_t{1} << 63).pad_to(32).zeros(32),
                   "extends past the end"});
  cases.push_back(
      {"overlapping tensors",
       Bytes().header(2, 0).tensor("a", 16, 0, 0).tensor("b", 8, 0, 32).pad_to(32).zeros(64),
       "overlaps tensor 'a'"});
  cases.push_back({"data section missing", Bytes().header(1, 0).tensor("t", 8, 0, 0), "file ends"});
  {
    Bytes b = valid_file();
    Bytes cut;
    cut.raw(std::string_view(reinterpret_cast<const char*>(b.bytes().data()), 70));
    cases.push_back({"truncated directory", cut, "truncated"});
  }

  ASSERT_GE(cases.size(), 15u);
  for (const Case& c : cases) {
    const Status s = parse(c.bytes);
    EXPECT_FALSE(s.is_ok()) << c.name;
    EXPECT_TRUE(s.code() == StatusCode::kInvalidFile || s.code() == StatusCode::kOutOfRange)
        << c.name;
    EXPECT_NE(s.message().find(c.expect), std::string::npos)
        << c.name << ": got '" << s.message() << "'";
  }
}

TEST(GgufCorrupt, MetadataMemoryLimitIsEnforced) {
  Bytes b;
  b.header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(1000);
  for (int i = 0; i < 1000; ++i) b.str("");
  ReaderLimits tight;
  tight.max_metadata_bytes = 4096;
  auto r = Reader::parse(b.bytes(), tight);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(Reader::parse(b.bytes()).is_ok());
}

TEST(GgufCorrupt, EveryTruncationOfAValidFileFailsCleanly) {
  const Bytes b = valid_file();
  for (size_t n = 0; n < b.size(); ++n) {
    auto r = Reader::parse(std::span(b.bytes()).first(n));
    EXPECT_FALSE(r.is_ok()) << "prefix of " << n << " bytes parsed";
  }
}

TEST(GgufCorrupt, ErrorsCarryOffsets) {
  const Bytes b = Bytes().header(0, 2).kv_u32("a", 1).str("b").put<uint32_t>(42).zeros(8);
  const Status s = parse(b);
  // Header is 24 bytes; key "a" entry is 8+1+4+4 = 17; key "b" is 9 bytes; type field at 50.
  EXPECT_NE(s.message().find("at offset 50"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace ds4::gguf
