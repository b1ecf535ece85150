// Protects: the engine accepts every file ds4's loader accepts and writes every key ds4 requires.
// One test per rule of ds4's validator as model.md §2.2-2.4 states it: required and
// optional metadata keys and the GGUF types each is read with, required and optional tensors, and
// tensors that are present but never read. The expected outcomes are ds4's (the spec), not values
// this code computed.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "model/hparams.h"
#include "model/inventory.h"
#include "model/test_files.h"
#include "model/validate.h"

namespace ds4::model {
namespace {

using gguf::Value;
using testing::micro;
using testing::set_key;
using testing::write_model;

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

FileCheck check(gguf::testing::TempDir& dir, const std::function<void(testing::Metadata&)>& meta,
                const std::function<void(std::vector<TensorSpec>&)>& tensors = nullptr) {
  auto r = gguf::Reader::open(write_model(dir, micro(), meta, tensors));
  EXPECT_TRUE(r.is_ok());
  return check_model_file(*r);
}

bool mentions(const std::vector<std::string>& v, const std::string& what) {
  return std::any_of(v.begin(), v.end(),
                     [&](const std::string& s) { return s.find(what) != std::string::npos; });
}

// model.md §2.2: the keys ds4's validator requires, each with the GGUF type it reads.
struct RequiredKey {
  const char* name;
  gguf::ValueType type;
};
constexpr RequiredKey kDs4RequiredKeys[] = {
    {"deepseek4.block_count", gguf::ValueType::kU32},
    {"deepseek4.embedding_length", gguf::ValueType::kU32},
    {"deepseek4.vocab_size", gguf::ValueType::kU32},
    {"deepseek4.attention.head_count", gguf::ValueType::kU32},
    {"deepseek4.attention.head_count_kv", gguf::ValueType::kU32},
    {"deepseek4.attention.key_length", gguf::ValueType::kU32},
    {"deepseek4.attention.value_length", gguf::ValueType::kU32},
    {"deepseek4.rope.dimension_count", gguf::ValueType::kU32},
    {"deepseek4.attention.q_lora_rank", gguf::ValueType::kU32},
    {"deepseek4.attention.output_lora_rank", gguf::ValueType::kU32},
    {"deepseek4.attention.output_group_count", gguf::ValueType::kU32},
    {"deepseek4.expert_count", gguf::ValueType::kU32},
    {"deepseek4.expert_used_count", gguf::ValueType::kU32},
    {"deepseek4.expert_feed_forward_length", gguf::ValueType::kU32},
    {"deepseek4.expert_shared_count", gguf::ValueType::kU32},
    {"deepseek4.hash_layer_count", gguf::ValueType::kU32},
    {"deepseek4.attention.sliding_window", gguf::ValueType::kU32},
    {"deepseek4.attention.indexer.head_count", gguf::ValueType::kU32},
    {"deepseek4.attention.indexer.key_length", gguf::ValueType::kU32},
    {"deepseek4.attention.indexer.top_k", gguf::ValueType::kU32},
    {"deepseek4.hyper_connection.count", gguf::ValueType::kU32},
    {"deepseek4.hyper_connection.sinkhorn_iterations", gguf::ValueType::kU32},
    {"deepseek4.attention.compress_ratios", gguf::ValueType::kArray},
    {"deepseek4.swiglu_clamp_exp", gguf::ValueType::kArray},
    {"deepseek4.rope.freq_base", gguf::ValueType::kF32},
    {"deepseek4.attention.compress_rope_freq_base", gguf::ValueType::kF32},
    {"deepseek4.expert_weights_scale", gguf::ValueType::kF32},
    {"deepseek4.attention.layer_norm_rms_epsilon", gguf::ValueType::kF32},
    {"deepseek4.hyper_connection.epsilon", gguf::ValueType::kF32},
    {"deepseek4.expert_weights_norm", gguf::ValueType::kBool},
};

TEST(LoaderRules, WrittenMetadataCarriesEveryKeyDs4Requires) {
  for (const Shape* s : {&kFlash, &kPro, &kTiny, &kSmall}) {
    const testing::Metadata kv = shape_metadata(*s);
    for (const RequiredKey& want : kDs4RequiredKeys) {
      const auto it =
          std::find_if(kv.begin(), kv.end(), [&](const auto& p) { return p.first == want.name; });
      ASSERT_NE(it, kv.end()) << s->name << " lacks " << want.name;
      EXPECT_EQ(it->second.type(), want.type) << s->name << " " << want.name;
    }
  }
}

TEST(LoaderRules, HeadCountKvIsRequiredAndMustBeOne) {
  gguf::testing::TempDir dir;
  const FileCheck missing = check(dir, set_key("deepseek4.attention.head_count_kv"));
  EXPECT_TRUE(mentions(missing.problems, "deepseek4.attention.head_count_kv"))
      << joined(missing.problems);
  const FileCheck two = check(dir, set_key("deepseek4.attention.head_count_kv", Value::u32(2)));
  EXPECT_TRUE(mentions(two.problems, "head_count_kv is 2, expected 1")) << joined(two.problems);
}

TEST(LoaderRules, DimensionKeysMustBeU32) {
  gguf::testing::TempDir dir;
  const FileCheck c = check(dir, set_key("deepseek4.expert_used_count", Value::u64(2)));
  EXPECT_FALSE(c.problems.empty());
}

TEST(LoaderRules, YarnKeysAreOptional) {
  gguf::testing::TempDir dir;
  const FileCheck c = check(dir, [](testing::Metadata& kv) {
    for (const char* k : {"deepseek4.rope.scaling.factor", "deepseek4.rope.scaling.yarn_beta_fast",
                          "deepseek4.rope.scaling.yarn_beta_slow",
                          "deepseek4.rope.scaling.original_context_length"})
      set_key(k)(kv);
  });
  EXPECT_TRUE(c.problems.empty()) << joined(c.problems);
  EXPECT_FALSE(mentions(c.notes, "metadata")) << joined(c.notes);
}

TEST(LoaderRules, PresentOptionalKeyMustHoldTheEngineValue) {
  gguf::testing::TempDir dir;
  const FileCheck c = check(dir, set_key("deepseek4.rope.scaling.factor", Value::f32(8)));
  EXPECT_TRUE(mentions(c.problems, "rope.scaling.factor is 8, expected 16")) << joined(c.problems);
  const FileCheck ctx =
      check(dir, set_key("deepseek4.rope.scaling.original_context_length", Value::u64(4096)));
  EXPECT_TRUE(mentions(ctx.problems, "original_context_length is 4096")) << joined(ctx.problems);
}

TEST(LoaderRules, OptionalKeyOfAnUnreadTypeIsIgnoredWithANote) {
  gguf::testing::TempDir dir;
  const FileCheck c = check(dir, set_key("deepseek4.rope.scaling.factor", Value::string("16")));
  EXPECT_TRUE(c.problems.empty()) << joined(c.problems);
  EXPECT_TRUE(mentions(c.notes, "ignored metadata key deepseek4.rope.scaling.factor"))
      << joined(c.notes);
}

TEST(LoaderRules, RequiredFloatKeysAreRequired) {
  gguf::testing::TempDir dir;
  for (const char* k : {"deepseek4.rope.freq_base", "deepseek4.attention.compress_rope_freq_base",
                        "deepseek4.expert_weights_scale", "deepseek4.hyper_connection.epsilon",
                        "deepseek4.attention.layer_norm_rms_epsilon"}) {
    const FileCheck c = check(dir, set_key(k));
    EXPECT_TRUE(mentions(c.problems, k)) << k << ": " << joined(c.problems);
  }
}

TEST(LoaderRules, FloatKeysAcceptF64U32AndI32) {
  gguf::testing::TempDir dir;
  EXPECT_TRUE(check(dir, set_key("deepseek4.rope.freq_base", Value::u32(10000))).problems.empty());
  EXPECT_TRUE(check(dir, set_key("deepseek4.rope.freq_base", Value::i32(10000))).problems.empty());
  EXPECT_TRUE(
      check(dir, set_key("deepseek4.rope.scaling.factor", Value::f64(16))).problems.empty());
  EXPECT_FALSE(check(dir, set_key("deepseek4.rope.freq_base", Value::u64(10000))).problems.empty());
}

TEST(LoaderRules, ExpertGroupKeysAreReadOnlyAsU32) {
  gguf::testing::TempDir dir;
  EXPECT_TRUE(check(dir, set_key("deepseek4.expert_group_count", Value::u32(0))).problems.empty());
  EXPECT_FALSE(check(dir, set_key("deepseek4.expert_group_count", Value::u32(2))).problems.empty());
  const FileCheck other = check(dir, set_key("deepseek4.expert_group_used_count", Value::i32(2)));
  EXPECT_TRUE(other.problems.empty()) << joined(other.problems);
  EXPECT_TRUE(mentions(other.notes, "expert_group_used_count")) << joined(other.notes);
}

TEST(LoaderRules, CompressRatiosMayBeI32ButNeverNegativeOrShort) {
  gguf::testing::TempDir dir;
  const Shape s = micro();
  std::vector<int32_t> r;
  for (int il = 0; il < s.n_layer; ++il) r.push_back(s.compress_ratio(il));
  EXPECT_TRUE(check(dir, set_key("deepseek4.attention.compress_ratios", Value::i32_array(r)))
                  .problems.empty());
  std::vector<int32_t> neg = r;
  neg[0] = -1;
  EXPECT_FALSE(check(dir, set_key("deepseek4.attention.compress_ratios", Value::i32_array(neg)))
                   .problems.empty());
  std::vector<int32_t> shorter(r.begin(), r.end() - 1);
  EXPECT_FALSE(check(dir, set_key("deepseek4.attention.compress_ratios", Value::i32_array(shorter)))
                   .problems.empty());
}

TEST(LoaderRules, ExpertWeightsNormMustBeTheBoolTrue) {
  gguf::testing::TempDir dir;
  EXPECT_FALSE(
      check(dir, set_key("deepseek4.expert_weights_norm", Value::boolean(false))).problems.empty());
  EXPECT_FALSE(
      check(dir, set_key("deepseek4.expert_weights_norm", Value::u32(1))).problems.empty());
}

// Hash-routed layers: the published files carry a selection bias that ds4 checks but never reads.
TEST(LoaderRules, HashLayerBiasIsAcceptedAndReportedAsIgnored) {
  gguf::testing::TempDir dir;
  const FileCheck c = check(dir, nullptr);
  EXPECT_TRUE(c.problems.empty()) << joined(c.problems);
  for (int il = 0; il < micro().n_hash_layer; ++il) {
    EXPECT_TRUE(mentions(
        c.notes, "ignored optional tensor 'blk." + std::to_string(il) + ".exp_probs_b.bias'"))
        << joined(c.notes);
  }
  EXPECT_FALSE(mentions(c.notes, "'blk." + std::to_string(micro().n_hash_layer) + ".exp_probs_b"));
}

TEST(LoaderRules, SelectionBiasMayBeAbsentOnEveryLayer) {
  gguf::testing::TempDir dir;
  const FileCheck c = check(dir, nullptr, [](std::vector<TensorSpec>& specs) {
    std::erase_if(specs, [](const TensorSpec& t) { return t.role == TensorRole::kRouterBias; });
  });
  EXPECT_TRUE(c.problems.empty()) << joined(c.problems);
  EXPECT_TRUE(c.notes.empty()) << joined(c.notes);
}

TEST(LoaderRules, IgnoredTensorIsStillCheckedForShapeAndType) {
  gguf::testing::TempDir dir;
  const FileCheck c = check(dir, nullptr, [](std::vector<TensorSpec>& specs) {
    for (TensorSpec& t : specs)
      if (t.name == "blk.0.exp_probs_b.bias") t.dims = {3};
  });
  EXPECT_TRUE(mentions(c.problems, "'blk.0.exp_probs_b.bias' has shape [3]")) << joined(c.problems);
}

TEST(LoaderRules, TensorsTheModelDoesNotNameAreIgnored) {
  gguf::testing::TempDir dir;
  const FileCheck c = check(dir, nullptr, [](std::vector<TensorSpec>& specs) {
    specs.push_back({"rope_freqs.weight", gguf::GgufType::kF32, {32}, TensorRole::kNormWeight, -1});
  });
  EXPECT_TRUE(c.problems.empty()) << joined(c.problems);
  EXPECT_TRUE(mentions(c.notes, "ignored tensor 'rope_freqs.weight'")) << joined(c.notes);
}

TEST(LoaderRules, IndexerQueryProjectionMayBeQ8) {
  gguf::testing::TempDir dir;
  auto retype = [](gguf::GgufType type) {
    return [type](std::vector<TensorSpec>& specs) {
      for (TensorSpec& t : specs)
        if (t.name == "blk.2.indexer.attn_q_b.weight") t.type = type;
    };
  };
  EXPECT_TRUE(check(dir, nullptr, retype(gguf::GgufType::kQ8_0)).problems.empty());
  EXPECT_FALSE(check(dir, nullptr, retype(gguf::GgufType::kI32)).problems.empty());
  // Other F16 matrices stay F16 (or wider): ds4 refuses Q8_0 there.
  const FileCheck c = check(dir, nullptr, [](std::vector<TensorSpec>& specs) {
    for (TensorSpec& t : specs)
      if (t.name == "blk.2.indexer.proj.weight") t.type = gguf::GgufType::kQ8_0;
  });
  EXPECT_FALSE(c.problems.empty());
}

TEST(LoaderRules, MtpBlockRequiresItsSelectionBias) {
  const auto specs = mtp_tensors(kFlash, Recipe::kQ2);
  const auto it = std::find_if(specs.begin(), specs.end(), [](const TensorSpec& t) {
    return t.name == "mtp.0.exp_probs_b.bias";
  });
  ASSERT_NE(it, specs.end());
  EXPECT_EQ(it->presence, Presence::kRequired);
}

}  // namespace
}  // namespace ds4::model
