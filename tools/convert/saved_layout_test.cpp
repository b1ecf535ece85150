// Protects: `ds4-gguf convert` reads checkpoints that transformers 5.x writes with save_pretrained.
// The names, shapes, dtypes and config.json are transformers' own: recorded on the GPU
// machine from a DeepseekV4ForCausalLM it saved (tools/reference/saved_checkpoint.py, transformers
// 5.17) into tests/data/hf_saved/. This test writes a checkpoint with exactly those tensors (random
// values; the vocabulary cut from 129,280 to 512 rows in both the shapes and the config so the
// files stay small), converts it, and checks every GGUF tensor byte for byte against the source
// tensor the official name map assigns it. transformers itself checked the converted file's logits
// on the GPU machine (bench/compat.md); this keeps the layout working in CI.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "gguf/reader.h"
#include "gguf/test_util.h"
#include "gguf/writer.h"
#include "model/validate.h"
#include "tools/convert/convert.h"
#include "tools/convert/name_map.h"
#include "tools/convert/safetensors_writer.h"

namespace ds4::convert {
namespace {

constexpr int64_t kRecordedVocab = 129280;
constexpr int64_t kTestVocab = 512;

std::string data_dir() {
  const char* src = std::getenv("DS4_SOURCE_DIR");
  return std::string(src != nullptr ? src : ".") + "/tests/data/hf_saved/";
}

struct Recorded {
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype;
};

std::vector<Recorded> recorded_tensors() {
  std::ifstream in(data_dir() + "tensors.txt");
  std::vector<Recorded> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    Recorded r;
    const size_t open = line.find(" ["), close = line.find("] ");
    r.name = line.substr(0, open);
    std::stringstream dims(line.substr(open + 2, close - open - 2));
    for (std::string d; std::getline(dims, d, ',');) {
      const int64_t v = std::stoll(d);
      r.shape.push_back(v == kRecordedVocab ? kTestVocab : v);
    }
    r.dtype = line.substr(close + 2);
    out.push_back(std::move(r));
  }
  return out;
}

std::string vocab_gguf(const gguf::testing::TempDir& tmp) {
  const std::string path = tmp.file("vocab.gguf");
  auto w = gguf::Writer::create(path);
  EXPECT_TRUE(w);
  std::vector<std::string> tokens;
  for (int i = 0; i < kTestVocab; ++i) tokens.push_back("t" + std::to_string(i));
  EXPECT_TRUE(w->add_metadata("tokenizer.ggml.model", gguf::Value::string("gpt2")).is_ok());
  EXPECT_TRUE(w->add_metadata("tokenizer.ggml.tokens", gguf::Value::string_array(tokens)).is_ok());
  EXPECT_TRUE(w->add_metadata("tokenizer.ggml.merges", gguf::Value::string_array({"t 0"})).is_ok());
  EXPECT_TRUE(w->finish().is_ok());
  return path;
}

TEST(SavedLayout, TransformersSavePretrainedCheckpointConverts) {
  const std::vector<Recorded> recorded = recorded_tensors();
  ASSERT_EQ(recorded.size(), 315u) << "tests/data/hf_saved/tensors.txt";
  std::ifstream cf(data_dir() + "config.json");
  nlohmann::json config = nlohmann::json::parse(cf);
  ASSERT_EQ(config["vocab_size"], kRecordedVocab);
  config["vocab_size"] = kTestVocab;
  const int n_expert = config["n_routed_experts"].get<int>();

  std::mt19937 rng(22);
  std::normal_distribution<float> nd(0.0f, 0.5f);
  std::vector<TensorData> tensors;
  std::map<std::string, const TensorData*> by_canonical;
  for (const Recorded& r : recorded) {
    int64_t n = 1;
    for (int64_t d : r.shape) n *= d;
    TensorData t{r.name, r.dtype == "I64" ? Dtype::kI64 : Dtype::kF32, r.shape, {}};
    ASSERT_TRUE(r.dtype == "I64" || r.dtype == "F32") << r.name << " " << r.dtype;
    t.bytes.resize(static_cast<size_t>(n) * (t.dtype == Dtype::kI64 ? 8 : 4));
    for (int64_t i = 0; i < n; ++i) {
      if (t.dtype == Dtype::kI64) {
        const int64_t v = (i * 5 + 1) % n_expert;
        std::memcpy(t.bytes.data() + 8 * i, &v, 8);
      } else {
        const float v = nd(rng);
        std::memcpy(t.bytes.data() + 4 * i, &v, 4);
      }
    }
    tensors.push_back(std::move(t));
  }
  for (const TensorData& t : tensors) by_canonical[canonical_name(t.name)] = &t;

  gguf::testing::TempDir tmp;
  const std::string dir = tmp.file("ckpt");
  ASSERT_TRUE(write_checkpoint(dir, tensors, config.dump(2), 4 << 20).is_ok());
  ConvertOptions o;
  o.src_dir = dir;
  o.output = tmp.file("saved.gguf");
  o.recipe = model::Recipe::kF32;
  o.vocab_gguf = vocab_gguf(tmp);
  o.threads = 2;
  ConvertReport report;
  const Status st = convert_checkpoint(o, &report);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(report.layout, "transformers-saved");
  EXPECT_EQ(report.n_unused, 0u);
  EXPECT_TRUE(report.unknown_config_keys.empty()) << report.unknown_config_keys.front();

  auto r = gguf::Reader::open(o.output);
  ASSERT_TRUE(r) << r.status().to_string();
  const model::FileCheck check = model::check_model_file(*r);
  EXPECT_TRUE(check.problems.empty()) << check.problems.front();
  ASSERT_TRUE(check.shape_known);
  const model::Shape shape = check.shape;
  EXPECT_EQ(shape.n_layer, 5);
  EXPECT_EQ(shape.n_hash_layer, 2);
  EXPECT_EQ(shape.compress_ratio(3), 128);
  size_t compared = 0;
  for (const model::TensorSpec& spec : model::model_tensors(shape, model::Recipe::kF32)) {
    const gguf::TensorInfo* t = r->find_tensor(spec.name);
    auto plan = source_plan(spec, shape, Layout::kOfficial);
    ASSERT_TRUE(plan) << spec.name;
    const auto src = by_canonical.find(canonical_name(plan->front().name));
    if (src == by_canonical.end()) {
      // Only an optional tensor may lack a source (the hash layers' selection bias).
      EXPECT_NE(spec.presence, model::Presence::kRequired) << spec.name;
      EXPECT_EQ(t, nullptr) << spec.name;
      continue;
    }
    ASSERT_NE(t, nullptr) << spec.name;
    std::vector<uint8_t> want;
    for (const SourceSegment& seg : *plan) {
      const TensorData* s = by_canonical.at(canonical_name(seg.name));
      const size_t elem = s->dtype == Dtype::kI64 ? 8 : 4;
      // Rows are the source's last dimension (GGUF's first), as source_plan counts them.
      const size_t rows_total = s->bytes.size() / elem / static_cast<size_t>(s->shape.back());
      const size_t row_bytes = s->bytes.size() / rows_total;
      const auto* first = s->bytes.data() + static_cast<size_t>(seg.row0) * row_bytes;
      if (elem == 8) {  // I64 expert ids are stored as I32
        for (size_t i = 0; i < static_cast<size_t>(seg.n_rows) * row_bytes / 8; ++i) {
          int64_t v;
          std::memcpy(&v, first + 8 * i, 8);
          const int32_t v32 = static_cast<int32_t>(v);
          const auto* b = reinterpret_cast<const uint8_t*>(&v32);
          want.insert(want.end(), b, b + 4);
        }
      } else {
        want.insert(want.end(), first, first + static_cast<size_t>(seg.n_rows) * row_bytes);
      }
    }
    const auto got = r->tensor_data(*t);
    ASSERT_EQ(got.size(), want.size()) << spec.name;
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size())) << spec.name;
    ++compared;
  }
  EXPECT_EQ(compared, r->tensors().size());
}

TEST(SavedLayout, UnknownConfigKeysAreReportedByName) {
  std::ifstream cf(data_dir() + "config.json");
  nlohmann::json config = nlohmann::json::parse(cf);
  config["rope_interleave"] = true;
  config["first_k_dense_replace"] = 1;
  std::vector<std::string> unknown;
  auto s = shape_from_config(config.dump(), &unknown);
  ASSERT_TRUE(s) << s.status().to_string();
  EXPECT_EQ(unknown, (std::vector<std::string>{"first_k_dense_replace", "rope_interleave"}));
}

TEST(SavedLayout, UnsupportedSemanticValuesAreRefused) {
  std::ifstream cf(data_dir() + "config.json");
  const nlohmann::json base = nlohmann::json::parse(cf);
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, nlohmann::json>>{{"scoring_func", "softmax"},
                                                           {"hidden_act", "gelu"},
                                                           {"num_key_value_heads", 2},
                                                           {"tie_word_embeddings", true}}) {
    nlohmann::json c = base;
    c[key] = value;
    auto s = shape_from_config(c.dump());
    ASSERT_FALSE(s) << key;
    EXPECT_NE(s.status().message().find(key), std::string::npos) << s.status().message();
  }
  nlohmann::json yarn = base;
  yarn["rope_parameters"]["compress"]["factor"] = 8.0;
  auto s = shape_from_config(yarn.dump());
  ASSERT_FALSE(s);
  EXPECT_NE(s.status().message().find("rope_parameters.compress.factor"), std::string::npos)
      << s.status().message();
  nlohmann::json late_hash = base;
  late_hash["mlp_layer_types"] = {"hash_moe", "moe", "hash_moe", "moe", "moe"};
  EXPECT_FALSE(shape_from_config(late_hash.dump()));
}

}  // namespace
}  // namespace ds4::convert
