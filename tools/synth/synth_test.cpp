// Protects: synthetic model files -- determinism (same seed, same bytes; chunking irrelevant), the
// documented value law for F32 tensors (what tools/reference regenerates in numpy), valid quantised
// blocks of sensible magnitude, a well-formed hash-routing table, and synth -> check round trips
// for every recipe of the tiny shape and the q2 small shape (needs the vocabulary fixture).
#include "tools/synth/synth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "base/f16.h"
#include "gguf/reader.h"
#include "gguf/test_util.h"
#include "model/validate.h"
#include "quant/dequantize.h"
#include "tools/convert/convert.h"
#include "tools/synth/hf_export.h"
#include "tools/synth/synth_values.h"

namespace ds4::synth {
namespace {

const model::TensorSpec& find(const std::vector<model::TensorSpec>& v, const std::string& name) {
  for (const auto& t : v) {
    if (t.name == name) return t;
  }
  ADD_FAILURE() << "no tensor " << name;
  return v.front();
}

std::vector<uint8_t> rows(const model::TensorSpec& t, uint64_t r0, uint64_t r1, uint64_t seed = 3) {
  std::vector<uint8_t> out((r1 - r0) * *gguf::byte_size(t.type, t.dims[0]));
  generate_rows(t, model::kTiny, seed, r0, r1, out.data());
  return out;
}

TEST(Synth, F32ValuesFollowTheDocumentedLaw) {
  // docs/synth.md, written out independently: FNV-1a of the name, splitmix64 finaliser on
  // key + (i+1)*golden, top 24 bits -> (2u+1)/2^24, times a power-of-two scale.
  const auto specs = model::model_tensors(model::kTiny, model::Recipe::kF32);
  const auto& t =
      find(specs, "blk.0.attn_q_a.weight");  // fan-in 256: scale 2^-3 (sqrt(3/256)=0.108)
  const auto bytes = rows(t, 0, 2, 42);
  const float* f = reinterpret_cast<const float*>(bytes.data());
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : std::string("blk.0.attn_q_a.weight"))
    h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  const uint64_t key = h ^ (42ull * 0x9E3779B97F4A7C15ull);
  for (uint64_t i : {0ull, 1ull, 255ull, 300ull, 511ull}) {
    uint64_t z = key + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const double u = static_cast<double>(static_cast<int64_t>(z >> 40) - (1 << 23));
    EXPECT_EQ(f[i], static_cast<float>((2 * u + 1) / 16777216.0 * 0.125)) << i;
  }
  const auto& norm = find(specs, "blk.0.attn_norm.weight");
  const auto norm_bytes = rows(norm, 0, 1);
  const float* nv = reinterpret_cast<const float*>(norm_bytes.data());
  for (size_t i = 0; i < norm.dims[0]; ++i) {
    EXPECT_GT(nv[i], 1.0f - 0.0625f);
    EXPECT_LT(nv[i], 1.0f + 0.0625f);
  }
}

TEST(Synth, ChunksAreIndependentOfHowTheTensorIsSplit) {
  for (model::Recipe r :
       {model::Recipe::kF16, model::Recipe::kQ2, model::Recipe::kQ4, model::Recipe::kQ8}) {
    const auto specs = model::model_tensors(model::kTiny, r);
    for (const char* name :
         {"blk.3.ffn_gate_exps.weight", "blk.3.ffn_down_exps.weight", "blk.0.attn_q_b.weight"}) {
      const auto& t = find(specs, name);
      const uint64_t n = t.n_elements() / t.dims[0];
      auto whole = rows(t, 0, n);
      auto a = rows(t, 0, 7), b = rows(t, 7, n);
      a.insert(a.end(), b.begin(), b.end());
      EXPECT_EQ(whole, a) << name;
      EXPECT_NE(whole, rows(t, 0, n, 4)) << name << ": the seed must matter";
    }
  }
}

TEST(Synth, QuantisedBlocksDequantiseToFiniteValuesOfTheRightSize) {
  for (model::Recipe r : {model::Recipe::kQ8, model::Recipe::kQ2, model::Recipe::kQ4}) {
    const auto specs = model::model_tensors(model::kTiny, r);
    for (const char* name : {"blk.3.ffn_gate_exps.weight", "blk.3.ffn_down_exps.weight",
                             "blk.3.ffn_up_shexp.weight"}) {
      const auto& t = find(specs, name);
      const auto bytes = rows(t, 0, 16);
      std::vector<float> x(16 * t.dims[0]);
      ASSERT_TRUE(quant::dequantize(t.type, bytes.data(), x.data(), static_cast<int64_t>(x.size()))
                      .is_ok());
      double sum2 = 0;
      for (float v : x) {
        ASSERT_TRUE(std::isfinite(v));
        sum2 += double(v) * v;
      }
      const double rms = std::sqrt(sum2 / x.size());
      const double law = value_law(t).scale;  // uniform(-law, law) has rms law/sqrt(3)
      EXPECT_GT(rms, 0.1 * law) << name << " " << to_string(r);
      EXPECT_LT(rms, 3.0 * law) << name << " " << to_string(r);
    }
  }
}

TEST(Synth, HashRoutingTablePicksDistinctValidExperts) {
  const auto specs = model::model_tensors(model::kTiny, model::Recipe::kQ2);
  const auto& t = find(specs, "blk.1.ffn_gate_tid2eid.weight");
  const auto bytes = rows(t, 0, 1000);
  const int32_t* e = reinterpret_cast<const int32_t*>(bytes.data());
  std::set<int> used;
  for (int tok = 0; tok < 1000; ++tok) {
    std::set<int32_t> row(e + tok * 2, e + tok * 2 + 2);
    EXPECT_EQ(row.size(), 2u);
    for (int32_t x : row) {
      EXPECT_GE(x, 0);
      EXPECT_LT(x, model::kTiny.n_expert);
      used.insert(x);
    }
  }
  EXPECT_EQ(used.size(), static_cast<size_t>(model::kTiny.n_expert));
}

std::string vocab_path() {
#ifdef DS4_TEST_VOCAB_PATH
  return std::ifstream(DS4_TEST_VOCAB_PATH).good() ? DS4_TEST_VOCAB_PATH : "";
#else
  return "";
#endif
}

// --decisive-routing: each layer's biases are the tiers 0, -4, -8, ... in some order, so the six
// highest are kRouterTier apart from the rest -- more than any sqrt(softplus) score can make up.
TEST(Synth, DecisiveBiasesArePermutedTiers) {
  for (const int n : {8, 12, 256, 384}) {
    const uint64_t key = tensor_key("blk.5.exp_probs_b.bias", 3);
    std::set<float> seen;
    for (int e = 0; e < n; ++e) seen.insert(tiered_bias(key, static_cast<uint64_t>(e), n));
    ASSERT_EQ(seen.size(), static_cast<size_t>(n)) << n;
    EXPECT_EQ(*seen.rbegin(), 0.0f);
    EXPECT_EQ(*seen.begin(), -kRouterTier * static_cast<float>(n - 1));
  }
  EXPECT_GT(kRouterTier, std::sqrt(std::log1p(std::exp(15.0f))));  // router logits below 15
  const model::TensorSpec bias{
      "blk.5.exp_probs_b.bias", gguf::GgufType::kF32, {8}, model::TensorRole::kRouterBias, 5};
  std::vector<float> plain(8), tiered(8);
  generate_rows(bias, model::kTiny, 3, 0, 1, reinterpret_cast<uint8_t*>(plain.data()));
  LawContext law;
  law.decisive.routing = true;
  generate_rows(bias, model::kTiny, 3, 0, 1, reinterpret_cast<uint8_t*>(tiered.data()), law);
  EXPECT_EQ(tiered[0], tiered_bias(tensor_key(bias.name, 3), 0, 8));
  EXPECT_LE(std::fabs(plain[0]), 0.125f);  // the default law is untouched
}

// The decisive head's map: ordinary tokens are permuted among themselves, every token's successor
// is ordinary, and the predecessor lists invert succ exactly.
TEST(Synth, SuccessorMapPermutesOrdinaryTokensAndCoversEveryToken) {
  std::vector<bool> ordinary(1000, true);
  for (int t : {0, 1, 2}) ordinary[static_cast<size_t>(t)] = false;
  for (int t = 900; t < 1000; ++t) ordinary[static_cast<size_t>(t)] = false;
  const SuccessorMap map(ordinary, tensor_key("output.weight", 5));
  std::set<int32_t> images;
  size_t n_preds = 0;
  for (int32_t t = 0; t < 1000; ++t) {
    const int32_t s = map.successor(t);
    ASSERT_TRUE(ordinary[static_cast<size_t>(s)]) << t;
    if (ordinary[static_cast<size_t>(t)]) images.insert(s);
    const auto p = map.predecessors(s);
    EXPECT_NE(std::find(p.begin(), p.end(), t), p.end()) << t;
  }
  EXPECT_EQ(images.size(), 897u);  // a bijection of the 897 ordinary tokens
  for (int32_t v = 0; v < 1000; ++v) {
    for (const int32_t t : map.predecessors(v)) EXPECT_EQ(map.successor(t), v);
    n_preds += map.predecessors(v).size();
    if (!ordinary[static_cast<size_t>(v)]) {
      EXPECT_TRUE(map.predecessors(v).empty()) << v;
    }
  }
  EXPECT_EQ(n_preds, 1000u);
}

// --decisive: head row v is the head's scale times the sum of its predecessors' stored embedding
// rows (exactly in f32; within Q8_0's rounding in the quantised recipes); indexer.proj is zero.
TEST(Synth, DecisiveHeadRowsAreScaledEmbeddingRowsAndIndexerProjIsZero) {
  std::vector<bool> ordinary(static_cast<size_t>(model::kTiny.n_vocab), true);
  ordinary[0] = ordinary[1] = false;
  const SuccessorMap map(ordinary, tensor_key("output.weight", 3));
  LawContext law;
  law.decisive = {true, true, true};
  law.successors = &map;
  const uint64_t n = static_cast<uint64_t>(model::kTiny.n_embd);
  const int32_t v = map.successor(1);  // a row with two predecessors: 1 and an ordinary token
  ASSERT_EQ(map.predecessors(v).size(), 2u);
  const auto f32 = model::model_tensors(model::kTiny, model::Recipe::kF32);
  std::vector<float> embd(2 * n), head(n);
  const auto& e = find(f32, "token_embd.weight");
  for (size_t k = 0; k < 2; ++k) {
    const uint64_t t = static_cast<uint64_t>(map.predecessors(v)[k]);
    generate_rows(e, model::kTiny, 3, t, t + 1, reinterpret_cast<uint8_t*>(embd.data() + k * n));
  }
  const auto& h = find(f32, "output.weight");
  const uint64_t r = static_cast<uint64_t>(v);
  generate_rows(h, model::kTiny, 3, r, r + 1, reinterpret_cast<uint8_t*>(head.data()), law);
  const float scale = value_law(h).scale;
  for (uint64_t d = 0; d < n; ++d) {
    const float want =
        (f16_to_f32(f32_to_f16(embd[d])) + f16_to_f32(f32_to_f16(embd[n + d]))) * scale;
    ASSERT_EQ(head[d], want) << d;
  }
  const auto q2 = model::model_tensors(model::kTiny, model::Recipe::kQ2);
  const auto& hq = find(q2, "output.weight");
  ASSERT_EQ(hq.type, gguf::GgufType::kQ8_0);
  std::vector<uint8_t> qbytes(*gguf::byte_size(hq.type, hq.dims[0]));
  generate_rows(hq, model::kTiny, 3, r, r + 1, qbytes.data(), law);
  std::vector<float> deq(n);
  ASSERT_TRUE(
      quant::dequantize(hq.type, qbytes.data(), deq.data(), static_cast<int64_t>(n)).is_ok());
  for (uint64_t d = 0; d < n; ++d) EXPECT_NEAR(deq[d], head[d], 2 * scale / 127) << d;
  for (const auto& t : q2) {
    if (t.name.find(".indexer.proj.weight") == std::string::npos) continue;
    std::vector<uint8_t> b(*gguf::byte_size(t.type, t.dims[0]) * 2, 0xff);
    generate_rows(t, model::kTiny, 3, 0, 2, b.data(), law);
    EXPECT_EQ(std::count(b.begin(), b.end(), 0), static_cast<long>(b.size())) << t.name;
    generate_rows(t, model::kTiny, 3, 0, 2, b.data());
    EXPECT_LT(std::count(b.begin(), b.end(), 0), static_cast<long>(b.size() / 4)) << t.name;
  }
}

TEST(Synth, EveryRecipeOfTheTestShapesPassesCheck) {
  const std::string vocab = vocab_path();
  if (vocab.empty()) GTEST_SKIP() << "vocabulary fixture missing (run through ctest)";
  gguf::testing::TempDir dir;
  struct Case {
    model::Shape shape;
    model::Recipe recipe;
    bool mtp;
  };
  std::vector<Case> cases;
  for (auto r : {model::Recipe::kF32, model::Recipe::kF16, model::Recipe::kQ8, model::Recipe::kQ2,
                 model::Recipe::kQ4})
    cases.push_back({model::kTiny, r, false});
  cases.push_back({model::kSmall, model::Recipe::kQ2, false});
  cases.push_back({model::kTiny, model::Recipe::kQ4, true});
  for (const Case& c : cases) {
    SynthOptions o;
    o.shape = c.shape;
    o.recipe = c.recipe;
    o.seed = 7;
    o.vocab_gguf = vocab;
    o.output = dir.file("m.gguf");
    o.mtp = c.mtp;
    SynthReport rep;
    const Status s = synthesize(o, &rep);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    auto r = gguf::Reader::open(o.output);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(rep.bytes, r->file_size());
    const model::FileCheck check = model::check_model_file(*r);
    EXPECT_TRUE(check.problems.empty()) << c.shape.name << " " << model::to_string(c.recipe) << ": "
                                        << (check.problems.empty() ? "" : check.problems[0]);
    EXPECT_EQ(check.mtp, c.mtp);
    EXPECT_EQ(r->find("tokenizer.ggml.tokens")->size(), 129280u);
  }
}

TEST(Synth, ClearErrors) {
  gguf::testing::TempDir dir;
  SynthOptions o;
  o.output = dir.file("x.gguf");
  EXPECT_EQ(synthesize(o, nullptr).code(), StatusCode::kInvalidArgument);  // no vocabulary
  o.vocab_gguf = dir.file("missing.gguf");
  EXPECT_EQ(synthesize(o, nullptr).code(), StatusCode::kNotFound);
  o.shape.n_embd = 100;
  EXPECT_EQ(synthesize(o, nullptr).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ds4::synth

namespace ds4::synth {
namespace {

// Protects: the recorded HF reference vectors stay in step with the shapes and the value law they
// were made from (tools/reference/README.md). Changing a test shape or the law without
// regenerating the vectors fails here, not later as a mysterious logits mismatch.
TEST(ReferenceVectors, MatchTheShapesTheyWereRecordedFor) {
  const char* src = std::getenv("DS4_SOURCE_DIR");
  if (src == nullptr) GTEST_SKIP() << "DS4_SOURCE_DIR not set (run through ctest)";
  for (const model::Shape& shape : {model::kTiny, model::kSmall}) {
    const std::string base = std::string(src) + "/tests/data/reference/" + std::string(shape.name);
    std::ifstream f(base + ".json");
    ASSERT_TRUE(f.good()) << base;
    const nlohmann::json j = nlohmann::json::parse(f);
    const auto& d = j.at("dims");
    EXPECT_EQ(d.at("n_layer"), shape.n_layer);
    EXPECT_EQ(d.at("n_embd"), shape.n_embd);
    EXPECT_EQ(d.at("n_head"), shape.n_head);
    EXPECT_EQ(d.at("n_out_group"), shape.n_out_group);
    EXPECT_EQ(d.at("n_lora_q"), shape.n_lora_q);
    EXPECT_EQ(d.at("n_lora_o"), shape.n_lora_o);
    EXPECT_EQ(d.at("n_expert"), shape.n_expert);
    EXPECT_EQ(d.at("n_expert_used"), shape.n_expert_used);
    EXPECT_EQ(d.at("n_ff_exp"), shape.n_ff_exp);
    EXPECT_EQ(d.at("n_swa"), shape.n_swa);
    EXPECT_EQ(d.at("n_indexer_head"), shape.n_indexer_head);
    EXPECT_EQ(d.at("indexer_top_k"), shape.indexer_top_k);
    EXPECT_EQ(j.at("seed"), 1);
    // Every tensor Hugging Face's model holds (the hash layers' ignored biases it has not).
    size_t hf_tensors = 0;
    for (const model::TensorSpec& spec : model::model_tensors(shape, model::Recipe::kF32))
      hf_tensors += spec.presence != model::Presence::kIgnored ? 1 : 0;
    EXPECT_EQ(j.at("tensors_verified_against_cpp_synth"), hf_tensors);
    const auto& cases = j.at("cases");
    std::ifstream logits(base + ".logits.f32", std::ios::binary | std::ios::ate);
    EXPECT_EQ(static_cast<size_t>(logits.tellg()),
              cases.size() * static_cast<size_t>(shape.n_vocab) * 4);
    for (const auto& c : cases) {
      EXPECT_EQ(c.at("continuation").size(), 32u);
      EXPECT_EQ(c.at("topk_ids").size(), c.at("tokens").size());
    }
  }
}

}  // namespace
}  // namespace ds4::synth

namespace ds4::synth {
namespace {

// Protects: `ds4-gguf convert` on a Hugging Face checkpoint holding the synthetic weights yields
// exactly the tensors `synth --quant f32` writes -- so the converted file is covered by the same HF
// reference vectors as the directly written one.
TEST(Synth, ConvertedHfCheckpointEqualsTheDirectFile) {
  const std::string vocab = vocab_path();
  if (vocab.empty()) GTEST_SKIP() << "vocabulary fixture missing (run through ctest)";
  gguf::testing::TempDir dir;
  SynthOptions o;
  o.shape = model::kTiny;
  o.recipe = model::Recipe::kF32;
  o.seed = 1;
  o.vocab_gguf = vocab;
  o.output = dir.file("direct.gguf");
  ASSERT_TRUE(synthesize(o, nullptr).is_ok());
  const Status exported = write_hf_checkpoint(o, dir.file("hf"));
  ASSERT_TRUE(exported.is_ok()) << exported.to_string();
  convert::ConvertOptions c;
  c.src_dir = dir.file("hf");
  c.output = dir.file("converted.gguf");
  c.recipe = model::Recipe::kF32;
  c.vocab_gguf = vocab;
  const Status converted = convert::convert_checkpoint(c);
  ASSERT_TRUE(converted.is_ok()) << converted.to_string();
  auto a = gguf::Reader::open(o.output);
  auto b = gguf::Reader::open(c.output);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  // The direct file also carries the hash layers' selection biases, which no checkpoint of
  // Hugging Face's holds and the engine never reads; every other tensor is the same.
  size_t ignored = 0;
  for (const model::TensorSpec& spec : model::model_tensors(o.shape, o.recipe)) {
    if (spec.presence != model::Presence::kIgnored) continue;
    ++ignored;
    EXPECT_EQ(b->find_tensor(spec.name), nullptr) << spec.name;
  }
  EXPECT_EQ(ignored, 3u);
  ASSERT_EQ(a->tensors().size(), b->tensors().size() + ignored);
  for (const gguf::TensorInfo& u_info : b->tensors()) {
    const gguf::TensorInfo* u = &u_info;
    const gguf::TensorInfo& t = *a->find_tensor(u->name);
    EXPECT_EQ(u->type, t.type) << t.name;
    EXPECT_EQ(u->dims, t.dims) << t.name;
    const auto x = a->tensor_data(t), y = b->tensor_data(*u);
    EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end())) << t.name;
  }
  EXPECT_TRUE(model::check_model_file(*b).problems.empty());
}

}  // namespace
}  // namespace ds4::synth
