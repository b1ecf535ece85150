// Protects: interoperability of our GGUF writer with an implementation nobody here wrote.
// Oracle: Hugging Face's @huggingface/gguf parser (npm, installed into tests/oracle by
// scripts/setup.sh), run through node on a file our writer produced. Every metadata value type,
// nested arrays, tensor names, shapes, types, offsets and the data offset must agree.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "gguf/reader.h"
#include "gguf/test_util.h"
#include "gguf/writer.h"

namespace ds4::gguf {
namespace {

using nlohmann::json;

std::string oracle_dir() {
  const char* src = std::getenv("DS4_SOURCE_DIR");
  return src ? std::string(src) + "/tests/oracle" : std::string();
}

bool run_capture(const std::string& cmd, std::string* out) {
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return false;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  return ::pclose(p) == 0;
}

// Compares one of our values with the oracle's typed value {type, value[, subType]}.
void expect_same(const Value& v, const json& typed, const json& raw, const std::string& key) {
  SCOPED_TRACE(key);
  if (typed.is_object() && typed.contains("type")) {
    ASSERT_EQ(typed["type"].get<int>(), static_cast<int>(v.type()));
  }
  switch (v.type()) {
    case ValueType::kString: ASSERT_EQ(raw.get<std::string>(), v.str()); return;
    case ValueType::kBool: ASSERT_EQ(raw.get<bool>(), *v.as_bool()); return;
    case ValueType::kF32:
    case ValueType::kF64: {
      if (raw.is_null()) {  // JSON has no infinities or NaN
        ASSERT_FALSE(std::isfinite(*v.as_f64()));
      } else {
        ASSERT_DOUBLE_EQ(raw.get<double>(), *v.as_f64());
      }
      return;
    }
    case ValueType::kU64:
    case ValueType::kI64: {
      const std::string want =
          v.type() == ValueType::kU64 ? std::to_string(*v.as_u64()) : std::to_string(*v.as_i64());
      ASSERT_EQ(raw.is_string() ? raw.get<std::string>() : raw.dump(), want);
      return;
    }
    case ValueType::kArray: {
      ASSERT_TRUE(raw.is_array());
      ASSERT_EQ(raw.size(), v.size());
      if (typed.is_object() && typed.contains("subType")) {
        ASSERT_EQ(typed["subType"].get<int>(), static_cast<int>(v.elem_type()));
      }
      for (uint64_t i = 0; i < v.size(); ++i)
        expect_same(v.at(i), json(), raw[i], key + "[" + std::to_string(i) + "]");
      return;
    }
    default: ASSERT_EQ(raw.get<int64_t>(), *v.as_i64()); return;
  }
}

TEST(GgufOracle, HuggingFaceParserAgreesWithOurWriter) {
  const std::string dir = oracle_dir();
  if (dir.empty() || !std::filesystem::exists(dir + "/node_modules/@huggingface/gguf")) {
    GTEST_SKIP() << "oracle not installed (run scripts/setup.sh)";
  }
  testing::TempDir tmp;
  const std::string path = tmp.file("oracle.gguf");
  std::vector<std::pair<std::string, Value>> kv = {
      {"general.architecture", Value::string("deepseek4")},
      {"a.u8", Value::u8(200)},
      {"a.i8", Value::i8(-5)},
      {"a.u16", Value::u16(60000)},
      {"a.i16", Value::i16(-300)},
      {"a.u32", Value::u32(129280)},
      {"a.i32", Value::i32(-7)},
      {"a.f32", Value::f32(1e-6f)},
      {"a.bool", Value::boolean(false)},
      {"a.str", Value::string("<｜User｜> ünïcödé")},
      {"a.u64", Value::u64(uint64_t{1} << 60)},
      {"a.i64", Value::i64(-(int64_t{1} << 55))},
      {"a.f64", Value::f64(160000.0)},
      {"a.ratios", Value::u32_array(std::vector<uint32_t>{0, 0, 4, 128})},
      {"a.clamp", Value::f32_array(std::vector<float>{10.0f, 10.0f})},
      {"a.tokens", Value::string_array({"<｜begin▁of▁sentence｜>", "Ġthe", "\n"})},
      {"a.nested",
       Value::nested_array(ValueType::kArray,
                           {Value::array(ValueType::kI16, {Value::i16(1), Value::i16(2)}),
                            Value::array(ValueType::kI16, {Value::i16(-3)})})},
  };
  struct T {
    const char* name;
    GgufType type;
    std::vector<uint64_t> dims;
  };
  const std::vector<T> tensors = {{"token_embd.weight", GgufType::kF16, {64, 3}},
                                  {"blk.0.ffn_gate_exps.weight", GgufType::kIQ2_XXS, {256, 2, 2}},
                                  {"blk.0.ffn_down_exps.weight", GgufType::kQ2_K, {256, 3}},
                                  {"blk.0.ffn_up_exps.weight", GgufType::kQ4_K, {512, 1}},
                                  {"blk.0.attn_kv.weight", GgufType::kQ8_0, {32, 5}},
                                  {"blk.0.ffn_gate_tid2eid.weight", GgufType::kI32, {6, 4}}};
  {
    auto w = Writer::create(path);
    ASSERT_TRUE(w.is_ok());
    for (auto& [k, v] : kv) ASSERT_TRUE(w->add_metadata(k, v).is_ok());
    for (const T& t : tensors) ASSERT_TRUE(w->add_tensor(t.name, t.type, t.dims).is_ok());
    ASSERT_TRUE(w->write_header().is_ok());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const std::vector<uint8_t> zeros(w->tensor_bytes(i), 0);
      ASSERT_TRUE(w->write_tensor_data(i, zeros).is_ok());
    }
    ASSERT_TRUE(w->finish().is_ok());
  }
  std::string out;
  ASSERT_TRUE(run_capture("cd '" + dir + "' && node gguf_dump.mjs '" + path + "'", &out)) << out;
  const json j = json::parse(out);
  auto ours = Reader::open(path);
  ASSERT_TRUE(ours.is_ok());

  EXPECT_EQ(j["version"].get<int>(), 3);
  EXPECT_EQ(j["tensor_data_offset"].get<std::string>(), std::to_string(ours->data_offset()));
  ASSERT_EQ(j["metadata"].size(), kv.size());
  for (auto& [k, v] : kv) {
    ASSERT_TRUE(j["metadata"].contains(k)) << k;
    expect_same(v, j["metadata"][k], j["metadata"][k]["value"], k);
  }
  ASSERT_EQ(j["tensors"].size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const json& t = j["tensors"][i];
    const TensorInfo* mine = ours->find_tensor(tensors[i].name);
    ASSERT_NE(mine, nullptr);
    EXPECT_EQ(t["name"].get<std::string>(), tensors[i].name);
    EXPECT_EQ(t["dtype"].get<int>(), static_cast<int>(tensors[i].type));
    ASSERT_EQ(t["shape"].size(), tensors[i].dims.size());
    for (size_t d = 0; d < tensors[i].dims.size(); ++d) {
      EXPECT_EQ(t["shape"][d].get<std::string>(), std::to_string(tensors[i].dims[d]));
    }
    EXPECT_EQ(std::stoull(t["offset"].get<std::string>()) + ours->data_offset(), mine->offset);
  }
}

}  // namespace
}  // namespace ds4::gguf
