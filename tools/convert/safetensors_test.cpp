// tools/convert/safetensors_test.cpp: safetensors round trips and hostile headers.
#include "tools/convert/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "gguf/test_util.h"
#include "tools/convert/safetensors_writer.h"

namespace ds4::convert {
namespace {

using gguf::testing::TempDir;

TensorData make(std::string name, Dtype dt, std::vector<int64_t> shape, uint8_t seed) {
  TensorData t{std::move(name), dt, std::move(shape), {}};
  uint64_t n = 1;
  for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
  t.bytes.resize(n * dtype_bytes(dt));
  for (size_t i = 0; i < t.bytes.size(); ++i) t.bytes[i] = static_cast<uint8_t>(seed + i * 7);
  return t;
}

// A file: 8-byte little-endian length, the header text, then `data_bytes` zero bytes.
std::vector<uint8_t> raw_file(const std::string& header, size_t data_bytes,
                              uint64_t len_override = 0) {
  std::vector<uint8_t> out(8);
  const uint64_t n = len_override ? len_override : header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  out.resize(out.size() + data_bytes);
  return out;
}

std::string parse_error(const std::vector<uint8_t>& bytes) {
  auto r = SafetensorsFile::parse(bytes, "t");
  return r ? std::string("OK") : r.status().message();
}

TEST(Safetensors, DtypeNames) {
  EXPECT_EQ(dtype_from_name("BF16"), Dtype::kBF16);
  EXPECT_EQ(dtype_from_name("F8_E4M3"), Dtype::kF8E4M3);
  EXPECT_EQ(dtype_from_name("F8_E4M3FN"), Dtype::kF8E4M3);
  EXPECT_EQ(dtype_from_name("F8_E8M0"), Dtype::kF8E8M0);
  EXPECT_EQ(dtype_from_name("E8M0"), Dtype::kF8E8M0);
  EXPECT_EQ(dtype_from_name("bf16"), std::nullopt);
  EXPECT_EQ(dtype_bytes(Dtype::kI64), 8u);
  EXPECT_EQ(to_string(Dtype::kF8E4M3), "F8_E4M3");
}

TEST(Safetensors, FileRoundTrip) {
  TempDir tmp;
  std::vector<TensorData> ts = {
      make("a", Dtype::kF32, {2, 3}, 1),      make("b.weight", Dtype::kBF16, {5}, 2),
      make("scalar", Dtype::kI64, {}, 3),     make("empty", Dtype::kF16, {0, 4}, 4),
      make("fp8", Dtype::kF8E4M3, {3, 3}, 5), make("sc", Dtype::kF8E8M0, {1, 1}, 6)};
  ASSERT_TRUE(write_safetensors(tmp.file("x.safetensors"), ts, {{"format", "pt"}}).is_ok());
  auto f = SafetensorsFile::open(tmp.file("x.safetensors"));
  ASSERT_TRUE(f) << f.status().to_string();
  EXPECT_EQ(f->metadata().at("format"), "pt");
  ASSERT_EQ(f->tensors().size(), ts.size());
  for (const TensorData& t : ts) {
    const TensorView* v = f->find(t.name);
    ASSERT_NE(v, nullptr) << t.name;
    EXPECT_EQ(v->dtype, t.dtype);
    EXPECT_EQ(v->shape, t.shape);
    ASSERT_EQ(v->data.size(), t.bytes.size());
    if (!t.bytes.empty()) {
      EXPECT_EQ(0, std::memcmp(v->data.data(), t.bytes.data(), t.bytes.size()));
    }
  }
  EXPECT_EQ(f->find("missing"), nullptr);
  // Data starts 8-byte aligned.
  std::ifstream in(tmp.file("x.safetensors"), std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ(n % 8, 0u);
}

TEST(Safetensors, ShardedDirectoryRoundTrip) {
  TempDir tmp;
  const std::string dir = tmp.file("ckpt");
  std::vector<TensorData> ts;
  for (int i = 0; i < 7; ++i)
    ts.push_back(make("t" + std::to_string(i), Dtype::kF32, {10, 10}, static_cast<uint8_t>(i)));
  ASSERT_TRUE(write_checkpoint(dir, ts, "{\"x\": 1}", 900).is_ok());
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.safetensors.index.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/config.json"));
  auto d = CheckpointDir::open(dir);
  ASSERT_TRUE(d) << d.status().to_string();
  EXPECT_EQ(d->shard_count(), 4u);  // 400 bytes each, two per 900-byte shard
  EXPECT_EQ(d->names().size(), 7u);
  for (const TensorData& t : ts) {
    const TensorView* v = d->find(t.name);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(0, std::memcmp(v->data.data(), t.bytes.data(), t.bytes.size()));
  }
  // Without the index the directory is scanned.
  std::filesystem::remove(dir + "/model.safetensors.index.json");
  auto scanned = CheckpointDir::open(dir);
  ASSERT_TRUE(scanned) << scanned.status().to_string();
  EXPECT_EQ(scanned->names().size(), 7u);
}

TEST(Safetensors, DirectoryErrors) {
  TempDir tmp;
  EXPECT_EQ(CheckpointDir::open(tmp.file("none")).status().code(), StatusCode::kNotFound);
  std::filesystem::create_directories(tmp.file("empty"));
  EXPECT_EQ(CheckpointDir::open(tmp.file("empty")).status().code(), StatusCode::kNotFound);
  // The same name in two shards.
  const std::string dup = tmp.file("dup");
  std::filesystem::create_directories(dup);
  ASSERT_TRUE(write_safetensors(dup + "/a.safetensors", {make("w", Dtype::kF32, {1}, 0)}).is_ok());
  ASSERT_TRUE(write_safetensors(dup + "/b.safetensors", {make("w", Dtype::kF32, {1}, 0)}).is_ok());
  auto r = CheckpointDir::open(dup);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("more than one shard"), std::string::npos);
  // An index naming a file outside the directory, and one mapping a tensor to the wrong shard.
  const std::string bad = tmp.file("bad");
  ASSERT_TRUE(write_checkpoint(bad, {make("w", Dtype::kF32, {1}, 0)}, "", 1 << 20).is_ok());
  std::ofstream(bad + "/model.safetensors.index.json")
      << R"({"weight_map": {"w": "../x.safetensors"}})";
  EXPECT_NE(CheckpointDir::open(bad).status().message().find("plain file name"), std::string::npos);
  std::ofstream(bad + "/model.safetensors.index.json")
      << R"({"weight_map": {"w": "model-00001-of-00001.safetensors", "v": "model-00001-of-00001.safetensors"}})";
  EXPECT_NE(CheckpointDir::open(bad).status().message().find("does not hold"), std::string::npos);
}

struct Hostile {
  const char* what;
  std::vector<uint8_t> bytes;
  const char* expect;  // substring of the error
};

TEST(Safetensors, HostileHeaders) {
  const std::string ok_entry = R"("w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]})";
  const std::vector<Hostile> cases = {
      {"too short", {1, 2, 3}, "too short"},
      {"length past end", raw_file("{}", 0, 1000), "past the end"},
      {"absurd length", raw_file("{}", 0, uint64_t{1} << 40), "limit"},
      {"invalid json", raw_file("{\"w\": ", 0), "invalid JSON"},
      {"not an object", raw_file("[1, 2]", 0), "not a JSON object"},
      {"entry not object", raw_file(R"({"w": 3})", 0), "not an object"},
      {"missing field", raw_file(R"({"w": {"dtype": "F32", "shape": [2]}})", 8), "lacks"},
      {"extra field",
       raw_file(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8], "x": 1}})", 8),
       "unknown field"},
      {"unknown dtype",
       raw_file(R"({"w": {"dtype": "F12", "shape": [2], "data_offsets": [0, 8]}})", 8),
       "unknown dtype"},
      {"dtype not string",
       raw_file(R"({"w": {"dtype": 4, "shape": [2], "data_offsets": [0, 8]}})", 8), "not a string"},
      {"negative shape",
       raw_file(R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", 8),
       "non-negative"},
      {"fractional shape",
       raw_file(R"({"w": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 8]}})", 8),
       "non-negative"},
      {"overflowing shape",
       raw_file(
           R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296, 16], "data_offsets": [0, 8]}})",
           8),
       "overflows"},
      {"offsets beyond data",
       raw_file(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 4), "beyond"},
      {"offsets reversed",
       raw_file(R"({"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 0]}})", 8), "begin"},
      {"size mismatch",
       raw_file(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 12),
       "elements need"},
      {"offsets malformed",
       raw_file(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0]}})", 8),
       "[begin, end]"},
      {"overlap",
       raw_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                   "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                12),
       "overlap"},
      {"duplicate name", raw_file("{" + ok_entry + ", " + ok_entry + "}", 8), "repeats the key"},
      {"metadata not object", raw_file(R"({"__metadata__": [1]})", 0), "__metadata__"},
      {"metadata value", raw_file(R"({"__metadata__": {"k": 1}})", 0), "not a string"},
      {"empty name", raw_file(R"({"": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}})", 0),
       "empty name"},
      {"too many dims",
       raw_file(R"({"w": {"dtype": "F32", "shape": [1,1,1,1,1,1,1,1,1], "data_offsets": [0, 4]}})",
                4),
       "dimensions"},
  };
  for (const Hostile& c : cases) {
    const std::string msg = parse_error(c.bytes);
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.what << ": got '" << msg << "'";
  }
  // And a sane header parses.
  EXPECT_EQ(parse_error(raw_file("{" + ok_entry + "}", 8)), "OK");
}

}  // namespace
}  // namespace ds4::convert
