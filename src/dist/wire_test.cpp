// Tests of the distributed wire messages: round trips, the prefix hash against FNV-1a's published
// vectors, f16 hidden states, and refusals of cut, oversized and inconsistent messages.
#include "dist/wire.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ds4::dist {
namespace {

Work sample_work(uint32_t width, HiddenBits bits) {
  Work w;
  w.session = 0x1122334455667788ull;
  w.request = 7;
  w.tokens = {1, 2, 300, 4000};
  w.prefix_hash = extend_prefix_hash(kPrefixHashBasis, std::vector<int32_t>{9, 9});
  w.result_hash = extend_prefix_hash(w.prefix_hash, w.tokens);
  w.pos0 = 2;
  w.route = {
      {.endpoint = "tcp://127.0.0.1:5001", .layer_first = 1, .layer_last = 2},
      {.endpoint = "tcp://127.0.0.1:5002", .layer_first = 3, .layer_last = 5, .output = true}};
  w.route_index = 1;
  w.flags = kWorkReset;
  w.bits = bits;
  w.hidden_width = width;
  for (size_t i = 0; i < w.tokens.size() * width; ++i) w.hidden.push_back(0.25f * i - 3.0f);
  return w;
}

TEST(Wire, PrefixHashIsFnv1aOverLittleEndianIds) {
  // FNV-1a 64 of no bytes is the basis; of the bytes 61 00 00 00 ("a" as a little-endian id 97)
  // it is FNV-1a of those four bytes, computed here byte by byte from the definition.
  EXPECT_EQ(extend_prefix_hash(kPrefixHashBasis, {}), kPrefixHashBasis);
  uint64_t h = kPrefixHashBasis;
  for (uint8_t b : {0x61, 0x00, 0x00, 0x00}) h = (h ^ b) * 1099511628211ull;
  const int32_t a = 97;
  EXPECT_EQ(extend_prefix_hash(kPrefixHashBasis, std::span(&a, 1)), h);
  // FNV-1a 64 of the single byte "a" is the published 0xaf63dc4c8601ec8c: its first step.
  EXPECT_EQ((kPrefixHashBasis ^ 0x61) * 1099511628211ull, 0xaf63dc4c8601ec8cull);
  // Extending span by span equals hashing the whole at once.
  const std::vector<int32_t> all = {5, 6, 7, 8};
  EXPECT_EQ(extend_prefix_hash(extend_prefix_hash(kPrefixHashBasis, std::span(all).first(2)),
                               std::span(all).subspan(2)),
            extend_prefix_hash(kPrefixHashBasis, all));
}

TEST(Wire, MessagesRoundTrip) {
  Hello h{.build = "abc123",
          .fingerprint = "ff00",
          .shape = "tiny",
          .n_layer = 4,
          .n_vocab = 129280,
          .hidden_width = 1024,
          .expert_bits = 2,
          .layer_first = 2,
          .layer_last = 3,
          .output = true,
          .ctx = 8192,
          .data_endpoint = "tcp://10.0.0.2:7000",
          .incarnation = 0xfeedfacecafebeefull};
  auto m = decode(encode(h));
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_EQ(m->type, MessageType::kHello);
  EXPECT_EQ(m->hello, h);

  for (uint32_t width : {1u, 6u}) {
    const Work w = sample_work(width, HiddenBits::kF32);
    m = decode(encode(w));
    ASSERT_TRUE(m.is_ok()) << m.status().message();
    EXPECT_EQ(m->work, w);
  }
  WorkResult r{.session = 3,
               .request = 7,
               .result_hash = 99,
               .kind = ResultKind::kLogits,
               .bits = HiddenBits::kF32,
               .width = 5,
               .values = {1, 2, 3, 4, 5}};
  m = decode(encode(r));
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_EQ(m->result, r);
  m = decode(encode(WorkResult{.request = 8}));
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_EQ(m->result.kind, ResultKind::kAck);
  const ErrorInfo e{.session = 3, .request = 9, .text = "worker KV prefix hash mismatch"};
  m = decode(encode(e));
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ(m->error, e);
  m = decode(encode_beat(MessageType::kAccept, 42));
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ(m->type, MessageType::kAccept);
  EXPECT_EQ(m->beat.incarnation, 42u);
  m = decode(encode_release(17));
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ(m->type, MessageType::kRelease);
  EXPECT_EQ(m->release, 17u);
}

TEST(Wire, F16HiddenStatesRoundToNearestEven) {
  Work w = sample_work(6, HiddenBits::kF16);
  w.hidden[0] = 1.0f + 1.0f / 4096.0f;  // halfway between two f16 values: rounds to even (1.0)
  const std::vector<uint8_t> bytes = encode(w);
  EXPECT_EQ(bytes.size(), encode(sample_work(6, HiddenBits::kF32)).size() - w.hidden.size() * 2);
  auto m = decode(bytes);
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_EQ(m->work.hidden[0], 1.0f);
  for (size_t i = 1; i < w.hidden.size(); ++i) EXPECT_EQ(m->work.hidden[i], w.hidden[i]);
}

TEST(Wire, RefusesCutOversizedAndInconsistentMessages) {
  const std::vector<uint8_t> good = encode(sample_work(6, HiddenBits::kF32));
  for (size_t n = 0; n < good.size(); n += 7) {
    EXPECT_FALSE(decode(std::span(good).first(n)).is_ok()) << n;
  }
  std::vector<uint8_t> extra = good;
  extra.push_back(0);
  EXPECT_FALSE(decode(extra).is_ok());
  std::vector<uint8_t> magic = good;
  magic[0] ^= 1;
  EXPECT_FALSE(decode(magic).is_ok());
  std::vector<uint8_t> version = good;
  version[4] = 9;
  EXPECT_NE(decode(version).status().message().find("protocol version 9"), std::string::npos);
  // A token changed in flight: the hashes no longer chain.
  Work w = sample_work(6, HiddenBits::kF32);
  w.tokens[1] = 5;
  EXPECT_NE(decode(encode(w)).status().message().find("do not chain"), std::string::npos);
  // Workers take a hidden state (layer 0 is the coordinator's).
  w = sample_work(0, HiddenBits::kF32);
  EXPECT_FALSE(decode(encode(w)).is_ok());
  // A route with a gap, one with the head before its end, one that starts at layer 0, an index
  // past its end.
  w = sample_work(6, HiddenBits::kF32);
  w.route[1].layer_first = 4;
  EXPECT_NE(decode(encode(w)).status().message().find("does not follow on"), std::string::npos);
  w = sample_work(6, HiddenBits::kF32);
  w.route[0].output = true;
  EXPECT_FALSE(decode(encode(w)).is_ok());
  w = sample_work(6, HiddenBits::kF32);
  w.route[0].layer_first = 0;
  EXPECT_FALSE(decode(encode(w)).is_ok());
  w = sample_work(6, HiddenBits::kF32);
  w.route_index = 2;
  EXPECT_FALSE(decode(encode(w)).is_ok());
  EXPECT_FALSE(decode(good, {.max_hops = 1}).is_ok());
  // More tokens than the limit, before anything is allocated for them.
  EXPECT_FALSE(decode(good, {.max_tokens = 3}).is_ok());
  // A hidden width beyond the limit.
  EXPECT_FALSE(decode(good, {.max_hidden_width = 5}).is_ok());
  // Logits of two rows.
  WorkResult r{.kind = ResultKind::kLogits, .width = 2, .values = {1, 2, 3, 4}};
  EXPECT_FALSE(decode(encode(r)).is_ok());
  // A HELLO claiming the head before the last layer.
  Hello h{.n_layer = 4, .layer_first = 1, .layer_last = 2, .output = true};
  EXPECT_FALSE(decode(encode(h)).is_ok());
}

}  // namespace
}  // namespace ds4::dist
