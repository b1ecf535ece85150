// Protects: the `--layers` syntax of features.md §10.2 (exactly one ':', end >= start, "output"
// as the end, numbers only), its resolution against the model's layers, which tensors a range
// binds (the embedding from layer 0 only, the head only with it, a hash layer's ignored bias
// never), and the validation of slice files (model/slice_file.h): a file with complete slice keys
// needs only its range's tensors; incomplete, mistyped or out-of-range keys and a malformed
// fingerprint are problems; the fingerprint of a slice file is the one it records.
#include "model/slice_file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "model/fingerprint.h"
#include "model/test_files.h"
#include "model/validate.h"

namespace ds4::model {
namespace {

using gguf::Value;
using testing::micro;
using testing::set_key;
using testing::write_model;

constexpr char kFingerprint[] = "0123456789abcdef0123456789abcdef";

TEST(SliceSyntax, AcceptsAToBAndAToOutput) {
  auto a = parse_layer_slice("0:2");
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  EXPECT_EQ(a->first, 0);
  EXPECT_EQ(a->last, 2);
  EXPECT_FALSE(a->output);
  auto b = parse_layer_slice("3:output");
  ASSERT_TRUE(b.is_ok()) << b.status().message();
  EXPECT_EQ(b->first, 3);
  EXPECT_EQ(b->last, -1);
  EXPECT_TRUE(b->output);
  auto c = parse_layer_slice("4:4");
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->first, 4);
  EXPECT_EQ(c->last, 4);
}

TEST(SliceSyntax, RefusesEverythingElseQuotingIt) {
  for (const char* bad :
       {"", "3", "1:2:3", "1::2", ":2", "2:", "a:2", "1:b", "-1:2", "1:-2", "+1:2", " 1:2", "1:2 ",
        "3:1", "0:Output", "0:outputs", "x:output", "99999999999:1"}) {
    auto r = parse_layer_slice(bad);
    ASSERT_FALSE(r.is_ok()) << "'" << bad << "' was accepted";
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(std::string("'") + bad + "'"), std::string::npos)
        << r.status().message();
  }
}

TEST(SliceSyntax, ResolvesWithinTheModel) {
  const Shape s = micro();  // 6 layers
  auto r = resolve_layer_slice(*parse_layer_slice("2:output"), s);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(*r, (LayerRange{2, 6, true}));
  EXPECT_EQ(range_name(*r), "2:output");
  r = resolve_layer_slice(*parse_layer_slice("0:5"), s);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(*r, (LayerRange{0, 6, false}));
  EXPECT_EQ(range_name(*r), "0:5");
  EXPECT_FALSE(resolve_layer_slice(*parse_layer_slice("0:6"), s).is_ok());
  EXPECT_FALSE(resolve_layer_slice(*parse_layer_slice("6:output"), s).is_ok());
  EXPECT_FALSE(resolve_layer_slice({.first = 0, .last = 4, .output = true}, s).is_ok());
}

TEST(SliceTensors, ARangeBindsItsLayersTheEmbeddingFromZeroAndTheHeadWithIt) {
  const Shape s = micro();
  const std::vector<TensorSpec> specs = model_tensors(s, Recipe::kQ2);
  const auto bound = [&](LayerRange r) {
    std::vector<std::string> out;
    for (const TensorSpec& t : specs)
      if (range_binds(r, t)) out.push_back(t.name);
    return out;
  };
  const auto has = [](const std::vector<std::string>& v, const std::string& n) {
    return std::find(v.begin(), v.end(), n) != v.end();
  };
  const auto front = bound({0, 2, false});
  EXPECT_TRUE(has(front, "token_embd.weight"));
  EXPECT_TRUE(has(front, "blk.1.ffn_down_exps.weight"));
  EXPECT_FALSE(has(front, "blk.2.ffn_down_exps.weight"));
  EXPECT_FALSE(has(front, "output.weight"));
  const auto back = bound({2, 6, true});
  EXPECT_FALSE(has(back, "token_embd.weight"));
  EXPECT_FALSE(has(back, "blk.1.attn_norm.weight"));
  for (const char* head : {"output.weight", "output_norm.weight", "output_hc_fn.weight",
                           "output_hc_base.weight", "output_hc_scale.weight"})
    EXPECT_TRUE(has(back, head)) << head;
  // The two cover the model once, but what no range binds: a hash layer's selection bias.
  for (const TensorSpec& t : specs) {
    const int n = int(has(front, t.name)) + int(has(back, t.name));
    EXPECT_EQ(n, t.presence == Presence::kIgnored ? 0 : 1) << t.name;
  }
}

// A micro model file cut to `range` by hand, with `meta` applied after the slice keys.
FileCheck check_slice(gguf::testing::TempDir& dir, LayerRange range,
                      const std::function<void(testing::Metadata&)>& meta = nullptr,
                      const std::string& drop = "") {
  auto r = gguf::Reader::open(write_model(
      dir, micro(),
      [&](testing::Metadata& kv) {
        for (auto& [k, v] : slice_metadata({range, kFingerprint})) kv.emplace_back(k, v);
        if (meta) meta(kv);
      },
      [&](std::vector<TensorSpec>& specs) {
        std::erase_if(
            specs, [&](const TensorSpec& t) { return !range_binds(range, t) || t.name == drop; });
      }));
  EXPECT_TRUE(r.is_ok());
  FileCheck c = check_model_file(*r);
  if (c.problems.empty()) {
    EXPECT_EQ(model_fingerprint(*r), kFingerprint);
  }
  return c;
}

TEST(SliceFiles, NeedOnlyTheirRangesTensors) {
  gguf::testing::TempDir dir;
  for (const LayerRange r : {LayerRange{0, 2, false}, LayerRange{2, 4, false},
                             LayerRange{4, 6, true}, LayerRange{0, 6, true}}) {
    const FileCheck c = check_slice(dir, r);
    EXPECT_TRUE(c.problems.empty()) << range_name(r) << ": " << c.problems.front();
    ASSERT_TRUE(c.slice.has_value());
    EXPECT_EQ(c.slice->range, r);
    EXPECT_EQ(c.slice->fingerprint, kFingerprint);
  }
  const FileCheck missing = check_slice(dir, {2, 4, false}, nullptr, "blk.3.attn_q_b.weight");
  ASSERT_EQ(missing.problems.size(), 1u);
  EXPECT_NE(missing.problems[0].find("blk.3.attn_q_b.weight"), std::string::npos);
}

TEST(SliceFiles, MalformedSliceKeysAreProblems) {
  gguf::testing::TempDir dir;
  const LayerRange r{2, 4, false};
  const auto problem = [&](const std::function<void(testing::Metadata&)>& meta,
                           const std::string& what) {
    const FileCheck c = check_slice(dir, r, meta);
    EXPECT_FALSE(c.problems.empty()) << what;
    const bool named = std::any_of(c.problems.begin(), c.problems.end(), [&](const auto& p) {
      return p.find(what) != std::string::npos;
    });
    EXPECT_TRUE(named) << what << " not named in: " << (c.problems.empty() ? "" : c.problems[0]);
  };
  problem(set_key(std::string(kSliceLastKey)), std::string(kSliceLastKey));
  problem(set_key(std::string(kSliceFirstKey), Value::i32(2)), std::string(kSliceFirstKey));
  problem(set_key(std::string(kSliceOutputKey), Value::u32(0)), std::string(kSliceOutputKey));
  problem(set_key(std::string(kSliceFingerprintKey), Value::string("ABC")), "not 32 lowercase");
  problem(set_key(std::string(kSliceLastKey), Value::u32(6)), "not a slice of this model");
  problem(set_key(std::string(kSliceFirstKey), Value::u32(5)), "not a slice of this model");
  problem(set_key(std::string(kSliceOutputKey), Value::boolean(true)), "not a slice");
}

}  // namespace
}  // namespace ds4::model
