// Protects: the shapes, the tensor inventory and the metadata of model files. Expected values are
// the published facts in model.md §1, §2.2-2.4 and §10 (and the 86.7 GB size of the published
// Flash q2 file), not values computed by this code.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>

#include "gguf/reader.h"
#include "gguf/test_util.h"
#include "gguf/writer.h"
#include "model/hparams.h"
#include "model/inventory.h"
#include "model/test_files.h"
#include "model/validate.h"

namespace ds4::model {
namespace {

using testing::micro;
using testing::set_key;
using testing::write_model;

std::map<std::string, TensorSpec> by_name(const std::vector<TensorSpec>& v) {
  std::map<std::string, TensorSpec> m;
  for (const auto& t : v) m.emplace(t.name, t);
  return m;
}

using D = std::vector<uint64_t>;

TEST(Shape, LayerKindsFollowThePublishedPattern) {
  EXPECT_EQ(kFlash.layer_kind(0), LayerKind::kSliding);
  EXPECT_EQ(kFlash.layer_kind(1), LayerKind::kSliding);
  EXPECT_EQ(kFlash.layer_kind(2), LayerKind::kCsa);
  EXPECT_EQ(kFlash.layer_kind(3), LayerKind::kHca);
  EXPECT_EQ(kFlash.layer_kind(42), LayerKind::kCsa);
  int csa = 0, hca = 0;
  for (int il = 0; il < kFlash.n_layer; ++il) {
    if (kFlash.compress_ratio(il) == 4) ++csa;
    if (kFlash.compress_ratio(il) == 128) ++hca;
  }
  EXPECT_EQ(csa, 21);
  EXPECT_EQ(hca, 20);
  EXPECT_EQ(kPro.compress_ratio(0), 128);  // Pro has no dense layer
  EXPECT_EQ(kPro.compress_ratio(60), 4);
  for (const Shape* s : builtin_shapes()) EXPECT_EQ(shape_problem(*s), "") << s->name;
  // Every test shape exercises all layer kinds and hash routing.
  for (const Shape& s : {kTiny, kSmall}) {
    std::map<LayerKind, int> kinds;
    for (int il = 0; il < s.n_layer; ++il) kinds[s.layer_kind(il)]++;
    EXPECT_EQ(kinds.size(), 3u) << s.name;
    EXPECT_TRUE(s.hash_routed(2) && s.layer_kind(2) == LayerKind::kCsa) << s.name;
  }
}

TEST(Inventory, FlashTensorsMatchTheSpecTable) {
  const auto t = by_name(model_tensors(kFlash, Recipe::kQ2));
  EXPECT_EQ(t.at("token_embd.weight").dims, (D{4096, 129280}));
  EXPECT_EQ(t.at("token_embd.weight").type, gguf::GgufType::kF16);
  EXPECT_EQ(t.at("output.weight").type, gguf::GgufType::kQ8_0);
  EXPECT_EQ(t.at("output_hc_fn.weight").dims, (D{16384, 4}));
  EXPECT_EQ(t.at("blk.0.hc_attn_fn.weight").dims, (D{16384, 24}));
  EXPECT_EQ(t.at("blk.0.attn_q_b.weight").dims, (D{1024, 32768}));
  EXPECT_EQ(t.at("blk.0.attn_output_a.weight").dims, (D{4096, 8192}));
  EXPECT_EQ(t.at("blk.0.attn_output_b.weight").dims, (D{8192, 4096}));
  EXPECT_EQ(t.count("blk.0.attn_compressor_kv.weight"), 0u);
  EXPECT_EQ(t.at("blk.2.attn_compressor_ape.weight").dims, (D{1024, 4}));
  EXPECT_EQ(t.at("blk.3.attn_compressor_ape.weight").dims, (D{512, 128}));
  EXPECT_EQ(t.at("blk.2.indexer.attn_q_b.weight").dims, (D{1024, 8192}));
  EXPECT_EQ(t.at("blk.2.indexer_compressor_ape.weight").dims, (D{256, 4}));
  EXPECT_EQ(t.count("blk.3.indexer.proj.weight"), 0u);
  EXPECT_EQ(t.at("blk.5.ffn_gate_exps.weight").dims, (D{4096, 2048, 256}));
  EXPECT_EQ(t.at("blk.5.ffn_gate_exps.weight").type, gguf::GgufType::kIQ2_XXS);
  EXPECT_EQ(t.at("blk.5.ffn_down_exps.weight").dims, (D{2048, 4096, 256}));
  EXPECT_EQ(t.at("blk.5.ffn_down_exps.weight").type, gguf::GgufType::kQ2_K);
  EXPECT_EQ(t.at("blk.2.ffn_gate_tid2eid.weight").dims, (D{6, 129280}));
  EXPECT_EQ(t.count("blk.3.ffn_gate_tid2eid.weight"), 0u);
  EXPECT_EQ(t.at("blk.3.exp_probs_b.bias").dims, (D{256}));
  EXPECT_EQ(model_tensors(kFlash, Recipe::kQ4)[0].type, gguf::GgufType::kF16);
}

TEST(Inventory, FlashQ2FileSizeIsThePublishedOne) {
  double bytes = 0;
  for (const auto& t : model_tensors(kFlash, Recipe::kQ2))
    bytes += static_cast<double>(*gguf::byte_size(t.type, t.n_elements()));
  EXPECT_NEAR(bytes / 1e9, 86.7, 0.1);  // the published Flash q2 file is 86.7 GB
}

TEST(Inventory, ProShapesMatchModelMdSection10) {
  const auto t = by_name(model_tensors(kPro, Recipe::kQ2));
  EXPECT_EQ(t.at("token_embd.weight").dims, (D{7168, 129280}));
  EXPECT_EQ(t.at("output_hc_fn.weight").dims, (D{28672, 4}));
  EXPECT_EQ(t.at("blk.0.hc_attn_fn.weight").dims, (D{28672, 24}));
  EXPECT_EQ(t.at("blk.0.attn_q_a.weight").dims, (D{7168, 1536}));
  EXPECT_EQ(t.at("blk.0.attn_q_b.weight").dims, (D{1536, 65536}));
  EXPECT_EQ(t.at("blk.0.attn_sinks.weight").dims, (D{128}));
  EXPECT_EQ(t.at("blk.0.attn_output_a.weight").dims, (D{4096, 16384}));
  EXPECT_EQ(t.at("blk.0.attn_output_b.weight").dims, (D{16384, 7168}));
  EXPECT_EQ(t.at("blk.2.indexer.attn_q_b.weight").dims, (D{1536, 8192}));
  EXPECT_EQ(t.at("blk.2.indexer.proj.weight").dims, (D{7168, 64}));
  EXPECT_EQ(t.at("blk.4.ffn_gate_inp.weight").dims, (D{7168, 384}));
  EXPECT_EQ(t.at("blk.4.ffn_up_exps.weight").dims, (D{7168, 3072, 384}));
  EXPECT_EQ(t.at("blk.4.ffn_down_exps.weight").dims, (D{3072, 7168, 384}));
  EXPECT_EQ(t.at("blk.4.ffn_down_shexp.weight").dims, (D{3072, 7168}));
  EXPECT_EQ(t.count("blk.0.attn_compressor_kv.weight"), 1u);  // ratio 128 on layer 0
  EXPECT_EQ(t.at("blk.1.ffn_gate_tid2eid.weight").dims, (D{6, 129280}));
}

TEST(Inventory, MtpTensorsMatchModelMdSection24) {
  const auto t = by_name(mtp_tensors(kFlash, Recipe::kQ4));
  EXPECT_EQ(t.size(), 32u);
  EXPECT_EQ(t.at("mtp.0.e_proj.weight").dims, (D{4096, 4096}));
  EXPECT_EQ(t.at("mtp.0.e_proj.weight").type, gguf::GgufType::kQ8_0);
  EXPECT_EQ(t.at("mtp.0.exp_probs_b.bias").dims, (D{256}));
  EXPECT_EQ(t.at("mtp.0.ffn_gate_exps.weight").type, gguf::GgufType::kQ4_K);
  EXPECT_EQ(t.count("mtp.0.attn_compressor_kv.weight"), 0u);
}

TEST(Validate, ConsistentTestShapeFileIsValid) {
  gguf::testing::TempDir dir;
  auto r = gguf::Reader::open(write_model(dir, micro(), nullptr, nullptr));
  ASSERT_TRUE(r.is_ok());
  const FileCheck c = check_model_file(*r);
  EXPECT_TRUE(c.shape_known);
  EXPECT_EQ(c.shape.n_vocab, 256);
  EXPECT_EQ(c.shape.kind, ShapeKind::kTest);
  EXPECT_TRUE(c.problems.empty()) << (c.problems.empty() ? "" : c.problems[0]);
}

TEST(Validate, EveryProblemIsReportedNotOnlyTheFirst) {
  gguf::testing::TempDir dir;
  const std::string path = write_model(
      dir, micro(), set_key("deepseek4.attention.layer_norm_rms_epsilon", gguf::Value::f32(1e-5f)),
      [](std::vector<TensorSpec>& specs) {
        for (auto it = specs.begin(); it != specs.end();) {
          if (it->name == "blk.1.attn_sinks.weight") {
            it = specs.erase(it);  // missing
            continue;
          }
          if (it->name == "blk.2.attn_kv.weight") it->dims[1] = 256;                 // wrong shape
          if (it->name == "blk.3.ffn_norm.weight") it->type = gguf::GgufType::kF16;  // wrong type
          ++it;
        }
        specs.push_back(
            {"blk.9.extra.weight", gguf::GgufType::kF32, {4}, TensorRole::kNormWeight, 9});
      });
  auto r = gguf::Reader::open(path);
  ASSERT_TRUE(r.is_ok());
  const FileCheck c = check_model_file(*r);
  std::string all;
  for (const auto& p : c.problems) all += p + "\n";
  EXPECT_EQ(c.problems.size(), 4u) << all;
  EXPECT_NE(all.find("missing tensor 'blk.1.attn_sinks.weight'"), std::string::npos) << all;
  EXPECT_NE(all.find("'blk.2.attn_kv.weight' has shape [256, 256], expected [256, 512]"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("'blk.3.ffn_norm.weight' has type f16"), std::string::npos) << all;
  // A tensor the model does not name is read past, as ds4 does.
  EXPECT_NE(std::find(c.notes.begin(), c.notes.end(),
                      "ignored tensor 'blk.9.extra.weight' (not part of the model)"),
            c.notes.end());
  EXPECT_NE(all.find("layer_norm_rms_epsilon is 1e-05"), std::string::npos) << all;
}

TEST(Validate, UndeclaredTestShapeIsRefused) {
  gguf::testing::TempDir dir;
  auto r =
      gguf::Reader::open(write_model(dir, micro(), set_key(std::string(kShapeNameKey)), nullptr));
  ASSERT_TRUE(r.is_ok());
  const FileCheck c = check_model_file(*r);
  EXPECT_FALSE(c.shape_known);
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_NE(c.problems[0].find("match neither DeepSeek V4 Flash nor Pro"), std::string::npos);
}

TEST(Metadata, FlashMetadataRoundTripsAndValidatesExactly) {
  gguf::testing::TempDir dir;
  const std::string path = dir.file("meta.gguf");
  auto w = gguf::Writer::create(path);
  ASSERT_TRUE(w.is_ok());
  for (auto& [k, v] : shape_metadata(kFlash)) ASSERT_TRUE(w->add_metadata(k, v).is_ok());
  ASSERT_TRUE(w->finish().is_ok());
  auto r = gguf::Reader::open(path);
  ASSERT_TRUE(r.is_ok());
  auto s = shape_from_metadata(*r);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(s->kind, ShapeKind::kFlash);
  EXPECT_TRUE(check_metadata(*r, kFlash).problems.empty());
  EXPECT_EQ(*r->get_u32("deepseek4.attention.indexer.top_k"), 512u);
  EXPECT_EQ(r->find("deepseek4.attention.compress_ratios")->at(3).raw_u64(), 128u);
  EXPECT_EQ(r->find(kShapeNameKey), nullptr);  // published shapes carry no test-shape key
}

}  // namespace
}  // namespace ds4::model
