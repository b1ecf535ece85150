// Protects: GGUF writer -> reader round trips of every metadata value type (nested arrays too),
// several tensor types, alignment handling, streaming in chunks and out of order, and the
// no-partial-file guarantee of the writer.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>
#include <thread>

#include "gguf/reader.h"
#include "gguf/test_util.h"
#include "gguf/writer.h"

namespace ds4::gguf {
namespace {

using testing::TempDir;

std::vector<std::pair<std::string, Value>> every_value_type() {
  std::vector<std::pair<std::string, Value>> kv;
  kv.emplace_back("t.u8", Value::u8(250));
  kv.emplace_back("t.i8", Value::i8(-120));
  kv.emplace_back("t.u16", Value::u16(65000));
  kv.emplace_back("t.i16", Value::i16(-32000));
  kv.emplace_back("t.u32", Value::u32(4000000000u));
  kv.emplace_back("t.i32", Value::i32(-2000000000));
  kv.emplace_back("t.f32", Value::f32(1.5e-6f));
  kv.emplace_back("t.bool", Value::boolean(true));
  kv.emplace_back("t.string", Value::string("héllo, ＤｅｅｐＳｅｅｋ \n \"quoted\""));
  kv.emplace_back("t.u64", Value::u64(std::numeric_limits<uint64_t>::max()));
  kv.emplace_back("t.i64", Value::i64(std::numeric_limits<int64_t>::min()));
  kv.emplace_back("t.f64", Value::f64(-0.1));
  kv.emplace_back("t.empty_string", Value::string(""));
  const std::vector<uint32_t> ratios = {0, 0, 4, 128, 4};
  kv.emplace_back("t.arr_u32", Value::u32_array(ratios));
  const std::vector<float> clamps = {10.0f, 10.0f, -0.0f, std::numeric_limits<float>::infinity()};
  kv.emplace_back("t.arr_f32", Value::f32_array(clamps));
  kv.emplace_back("t.arr_bool",
                  Value::array(ValueType::kBool, {Value::boolean(true), Value::boolean(false)}));
  kv.emplace_back("t.arr_i8", Value::array(ValueType::kI8, {Value::i8(-1), Value::i8(127)}));
  kv.emplace_back("t.arr_f64",
                  Value::array(ValueType::kF64, {Value::f64(1e300), Value::f64(-2.5)}));
  kv.emplace_back("t.arr_string",
                  Value::string_array({"a", "", "Ġthe", "<｜begin▁of▁sentence｜>"}));
  kv.emplace_back("t.arr_empty", Value::array(ValueType::kU64, {}));
  // Arrays of arrays, three levels deep, mixing element types per level.
  Value inner1 = Value::array(ValueType::kI16, {Value::i16(1), Value::i16(-2)});
  Value inner2 = Value::array(ValueType::kI16, {});
  Value strs = Value::string_array({"x", "yz"});
  Value mid = Value::nested_array(ValueType::kArray, {inner1, inner2});
  Value mid2 = Value::nested_array(ValueType::kArray, {strs});
  kv.emplace_back("t.arr_nested", Value::nested_array(ValueType::kArray, {mid, mid2}));
  return kv;
}

struct TensorCase {
  std::string name;
  GgufType type;
  std::vector<uint64_t> dims;
};

std::vector<uint8_t> pattern(uint64_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<uint8_t>(x);
  }
  return v;
}

void write_file(const std::string& path, uint32_t alignment, const std::vector<TensorCase>& tensors,
                bool reverse_chunks) {
  auto w = Writer::create(path, alignment);
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  for (auto& [k, v] : every_value_type()) ASSERT_TRUE(w->add_metadata(k, v).is_ok()) << k;
  for (const auto& t : tensors)
    ASSERT_TRUE(w->add_tensor(t.name, t.type, t.dims).is_ok()) << t.name;
  ASSERT_TRUE(w->write_header().is_ok());
  for (size_t i = tensors.size(); i-- > 0;) {  // tensors in reverse order, each in 3 chunks
    const auto data = pattern(w->tensor_bytes(i), static_cast<uint32_t>(i));
    const size_t c1 = data.size() / 3, c2 = 2 * data.size() / 3;
    const std::span<const uint8_t> d(data);
    if (reverse_chunks) {
      ASSERT_TRUE(w->write_tensor_data(i, d.subspan(c2), c2).is_ok());
      ASSERT_TRUE(w->write_tensor_data(i, d.subspan(c1, c2 - c1), c1).is_ok());
      ASSERT_TRUE(w->write_tensor_data(i, d.subspan(0, c1), 0).is_ok());
    } else {
      ASSERT_TRUE(w->write_tensor_data(i, d, 0).is_ok());
    }
  }
  const Status s = w->finish();
  ASSERT_TRUE(s.is_ok()) << s.to_string();
}

const std::vector<TensorCase> kTensors = {
    {"token_embd.weight", GgufType::kF16, {64, 10}},
    {"blk.0.attn_q_a.weight", GgufType::kQ8_0, {64, 3}},
    {"blk.0.ffn_gate_exps.weight", GgufType::kIQ2_XXS, {256, 2, 3}},
    {"blk.0.ffn_down_exps.weight", GgufType::kQ2_K, {512, 1}},
    {"blk.0.ffn_up_exps.weight", GgufType::kQ4_K, {256, 2}},
    {"blk.0.ffn_gate_tid2eid.weight", GgufType::kI32, {6, 7}},
    {"output_norm.weight", GgufType::kF32, {5}},
    {"x.bf16", GgufType::kBF16, {3, 1, 1, 1, 1, 1, 1, 2}},
};

TEST(GgufRoundTrip, EveryValueTypeAndTensorTypeSurvives) {
  for (uint32_t alignment : {32u, 64u, 4096u}) {
    TempDir dir;
    const std::string path = dir.file("m.gguf");
    write_file(path, alignment, kTensors, alignment == 64);
    ASSERT_FALSE(std::filesystem::exists(path + ".partial"));
    auto r = Reader::open(path);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r->version(), 3u);
    EXPECT_EQ(r->alignment(), alignment);
    EXPECT_EQ(r->data_offset() % alignment, 0u);
    const auto expected = every_value_type();
    const size_t extra = alignment == 32 ? 0 : 1;  // general.alignment recorded when not default
    ASSERT_EQ(r->metadata().size(), expected.size() + extra);
    for (const auto& [k, v] : expected) {
      const Value* got = r->find(k);
      ASSERT_NE(got, nullptr) << k;
      EXPECT_TRUE(*got == v) << k << ": " << got->to_display() << " vs " << v.to_display();
    }
    ASSERT_EQ(r->tensors().size(), kTensors.size());
    for (size_t i = 0; i < kTensors.size(); ++i) {
      const TensorInfo* t = r->find_tensor(kTensors[i].name);
      ASSERT_NE(t, nullptr);
      EXPECT_EQ(t->type, kTensors[i].type);
      EXPECT_EQ(t->dims, kTensors[i].dims);
      EXPECT_EQ(t->offset % alignment, 0u);
      const auto data = r->tensor_data(*t);
      const auto want = pattern(t->n_bytes, static_cast<uint32_t>(i));
      ASSERT_EQ(data.size(), want.size());
      EXPECT_TRUE(std::equal(data.begin(), data.end(), want.begin())) << t->name;
    }
    EXPECT_EQ(r->find_tensor("blk.0.ffn_gate_exps.weight")->n_bytes, 6u * 66u);
    EXPECT_EQ(r->find_tensor("blk.0.ffn_up_exps.weight")->n_bytes, 2u * 144u);
    EXPECT_EQ(r->find_tensor("blk.0.ffn_gate_exps.weight")->n_rows(), 6u);
  }
}

TEST(GgufRoundTrip, TypedGettersEnforceTypes) {
  TempDir dir;
  const std::string path = dir.file("m.gguf");
  write_file(path, 32, {{"a", GgufType::kF32, {1}}}, false);
  auto r = Reader::open(path);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(*r->get_u32("t.u32"), 4000000000u);
  EXPECT_EQ(r->get_u32("t.i32").status().code(), StatusCode::kInvalidModel);
  EXPECT_EQ(r->get_u32("nope").status().code(), StatusCode::kInvalidModel);
  EXPECT_NE(r->get_u32("nope").status().message().find("missing metadata key 'nope'"),
            std::string::npos);
  EXPECT_EQ(*r->get_u64_like("t.u64"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(*r->get_u64_like("t.u32"), 4000000000u);
  EXPECT_DOUBLE_EQ(*r->get_f64_like("t.f32"), static_cast<double>(1.5e-6f));
  EXPECT_DOUBLE_EQ(*r->get_f64_like("t.i32"), -2000000000.0);
  EXPECT_FALSE(r->get_f64_like("t.u64").is_ok());
  EXPECT_TRUE(*r->get_bool("t.bool"));
  EXPECT_EQ(*r->get_string("t.empty_string"), "");
  const auto arr = r->find("t.arr_u32")->as_i64_array();
  ASSERT_TRUE(arr.has_value());
  EXPECT_EQ(*arr, (std::vector<int64_t>{0, 0, 4, 128, 4}));
  const auto strs = r->find("t.arr_string")->as_string_array();
  ASSERT_TRUE(strs.has_value());
  EXPECT_EQ((*strs)[3], "<｜begin▁of▁sentence｜>");
  EXPECT_FALSE(r->find("t.arr_string")->as_i64_array().has_value());
}

TEST(GgufWriter, AbandonedWriteLeavesNoFile) {
  TempDir dir;
  const std::string path = dir.file("m.gguf");
  {
    auto w = Writer::create(path);
    ASSERT_TRUE(w.is_ok());
    ASSERT_TRUE(w->add_tensor("a", GgufType::kF32, {8}).is_ok());
    ASSERT_TRUE(w->write_header().is_ok());
    const std::vector<uint8_t> half(16, 1);
    ASSERT_TRUE(w->write_tensor_data(0, half).is_ok());
    const Status s = w->finish();  // 16 of 32 bytes: refused
    EXPECT_EQ(s.code(), StatusCode::kInternal);
    EXPECT_NE(s.message().find("received 16 of 32 bytes"), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
}

TEST(GgufWriter, RejectsBadDeclarations) {
  TempDir dir;
  auto w = Writer::create(dir.file("m.gguf"));
  ASSERT_TRUE(w.is_ok());
  EXPECT_FALSE(w->add_metadata("", Value::u8(1)).is_ok());
  EXPECT_FALSE(w->add_metadata("bad\xff", Value::u8(1)).is_ok());
  EXPECT_TRUE(w->add_metadata("k", Value::u8(1)).is_ok());
  EXPECT_FALSE(w->add_metadata("k", Value::u8(2)).is_ok());
  EXPECT_FALSE(w->add_metadata("general.alignment", Value::u32(64)).is_ok());
  EXPECT_FALSE(w->add_tensor("q", GgufType::kQ8_0, {33}).is_ok());  // not whole blocks
  EXPECT_FALSE(w->add_tensor("z", GgufType::kF32, {4, 0}).is_ok());
  EXPECT_FALSE(w->add_tensor("d", GgufType::kF32, {1, 1, 1, 1, 1, 1, 1, 1, 1}).is_ok());
  EXPECT_TRUE(w->add_tensor("t", GgufType::kF32, {4}).is_ok());
  EXPECT_FALSE(w->add_tensor("t", GgufType::kF32, {4}).is_ok());
  EXPECT_FALSE(Writer::create(dir.file("x.gguf"), 48).is_ok());
  EXPECT_EQ(Writer::create("/nonexistent-dir/x.gguf").status().code(), StatusCode::kIoError);
  ASSERT_TRUE(w->write_header().is_ok());
  const std::vector<uint8_t> big(17, 0);
  EXPECT_EQ(w->write_tensor_data(0, big).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(w->write_tensor_data(1, big).code(), StatusCode::kInvalidArgument);
}

TEST(GgufWriter, ParallelChunkedWritesAssembleExactly) {
  TempDir dir;
  const std::string path = dir.file("p.gguf");
  auto w = Writer::create(path);
  ASSERT_TRUE(w.is_ok());
  ASSERT_TRUE(w->add_tensor("big", GgufType::kQ8_0, {32 * 1024, 16}).is_ok());
  ASSERT_TRUE(w->write_header().is_ok());
  const auto data = pattern(w->tensor_bytes(0), 7);
  std::vector<std::thread> threads;
  const size_t n_chunks = 16, chunk = data.size() / n_chunks;
  for (size_t c = 0; c < n_chunks; ++c) {
    threads.emplace_back([&, c] {
      const size_t end = c + 1 == n_chunks ? data.size() : (c + 1) * chunk;
      EXPECT_TRUE(
          w->write_tensor_data(0, std::span(data).subspan(c * chunk, end - c * chunk), c * chunk)
              .is_ok());
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(w->finish().is_ok());
  auto r = Reader::open(path);
  ASSERT_TRUE(r.is_ok());
  const auto got = r->tensor_data(r->tensors()[0]);
  EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin(), data.end()));
}

TEST(GgufReader, OpenReportsMissingFile) {
  auto r = Reader::open("/nonexistent/model.gguf");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/model.gguf"), std::string::npos);
}

}  // namespace
}  // namespace ds4::gguf
