// tools/convert/convert_test.cpp: config -> shape, the name map against semantics-diff.md B.1, and
// whole fake checkpoints in both layouts converted to GGUF (exact with recipe f32; right types and
// valid metadata with the quantised recipes; clear errors for broken checkpoints).
#include "tools/convert/convert.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "base/f16.h"
#include "gguf/reader.h"
#include "gguf/test_util.h"
#include "gguf/writer.h"
#include "model/hparams.h"
#include "quant/dequantize.h"
#include "tools/convert/name_map.h"
#include "tools/convert/safetensors_writer.h"
#include "tools/convert/tokenizer_keys.h"

namespace ds4::convert {
namespace {

using gguf::testing::TempDir;
using nlohmann::json;

// kTiny with a 512-token vocabulary and 4 experts: every layer kind, hash routing and bias, small
// files.
model::Shape test_shape() {
  model::Shape s = model::kTiny;
  s.n_vocab = 512;
  s.n_expert = 4;
  return s;
}

json config_for(const model::Shape& s, bool official_keys) {
  std::vector<int> ratios;
  for (int il = 0; il < s.n_layer; ++il) ratios.push_back(s.compress_ratio(il));
  ratios.push_back(0);  // the MTP layer's entry
  json j = {{"vocab_size", s.n_vocab},
            {"head_dim", s.head_dim},
            {"o_groups", s.n_out_group},
            {"q_lora_rank", s.n_lora_q},
            {"o_lora_rank", s.n_lora_o},
            {"n_routed_experts", s.n_expert},
            {"n_shared_experts", s.n_expert_shared},
            {"index_n_heads", s.n_indexer_head},
            {"index_head_dim", s.indexer_head_dim},
            {"index_topk", s.indexer_top_k},
            {"hc_mult", s.n_hc},
            {"hc_sinkhorn_iters", s.n_sinkhorn},
            {"compress_ratios", ratios},
            {"swiglu_limit", 10.0}};
  if (official_keys) {
    j.update({{"n_layers", s.n_layer},
              {"dim", s.n_embd},
              {"n_heads", s.n_head},
              {"rope_head_dim", s.n_rot},
              {"n_activated_experts", s.n_expert_used},
              {"moe_inter_dim", s.n_ff_exp},
              {"n_hash_layers", s.n_hash_layer},
              {"window_size", s.n_swa},
              {"route_scale", s.expert_weights_scale}});
  } else {
    j.update({{"num_hidden_layers", s.n_layer},
              {"hidden_size", s.n_embd},
              {"num_attention_heads", s.n_head},
              {"qk_rope_head_dim", s.n_rot},
              {"num_experts_per_tok", s.n_expert_used},
              {"moe_intermediate_size", s.n_ff_exp},
              {"num_hash_layers", s.n_hash_layer},
              {"sliding_window", s.n_swa},
              {"routed_scaling_factor", s.expert_weights_scale},
              {"rms_norm_eps", 1e-6},
              {"rope_theta", 10000.0},
              {"model_type", "deepseek_v4"}});
  }
  return j;
}

// --- config.json -> Shape ------------------------------------------------------------------

TEST(ConvertConfig, PublishedShapesAreRecognised) {
  auto flash = shape_from_config(config_for(model::kFlash, false).dump());
  ASSERT_TRUE(flash) << flash.status().to_string();
  EXPECT_EQ(flash->name, "flash");
  auto pro = shape_from_config(config_for(model::kPro, true).dump());
  ASSERT_TRUE(pro) << pro.status().to_string();
  EXPECT_EQ(pro->name, "pro");
  EXPECT_FALSE(pro->dense_first_layers);
  auto custom = shape_from_config(config_for(test_shape(), false).dump());
  ASSERT_TRUE(custom);
  EXPECT_EQ(custom->name, "custom");
  EXPECT_EQ(custom->n_vocab, 512);
}

TEST(ConvertConfig, Errors) {
  json j = config_for(model::kFlash, false);
  j.erase("index_topk");
  EXPECT_NE(shape_from_config(j.dump()).status().message().find("index_topk"), std::string::npos);
  j = config_for(model::kFlash, false);
  j["compress_ratios"][5] = 4;
  EXPECT_NE(shape_from_config(j.dump()).status().message().find("compress_ratios[5]"),
            std::string::npos);
  j = config_for(model::kFlash, false);
  j["head_dim"] = 256;
  EXPECT_FALSE(shape_from_config(j.dump()));
  j = config_for(model::kFlash, false);
  j["rope_theta"] = 50000;
  EXPECT_NE(shape_from_config(j.dump()).status().message().find("rope_theta"), std::string::npos);
  j = config_for(model::kFlash, false);
  j["hidden_size"] = "4096";
  EXPECT_FALSE(shape_from_config(j.dump()));
  EXPECT_FALSE(shape_from_config("{not json"));
  EXPECT_FALSE(shape_from_config("[]"));
}

// --- the name map, written out independently from semantics-diff.md B.1 -------------------

TEST(ConvertNames, MatchesTheSpecTable) {
  struct Row {
    const char* gguf;
    const char* official;
    const char* hf;
  };
  const Row rows[] = {
      {"token_embd.weight", "embed.weight", "model.embed_tokens.weight"},
      {"output_norm.weight", "norm.weight", "model.norm.weight"},
      {"output.weight", "head.weight", "lm_head.weight"},
      {"output_hc_fn.weight", "hc_head_fn", "model.hc_head.hc_fn"},
      {"output_hc_base.weight", "hc_head_base", "model.hc_head.hc_base"},
      {"output_hc_scale.weight", "hc_head_scale", "model.hc_head.hc_scale"},
      {"blk.2.hc_attn_fn.weight", "layers.2.hc_attn_fn", "model.layers.2.attn_hc.fn"},
      {"blk.2.hc_attn_base.weight", "layers.2.hc_attn_base", "model.layers.2.attn_hc.base"},
      {"blk.2.hc_attn_scale.weight", "layers.2.hc_attn_scale", "model.layers.2.attn_hc.scale"},
      {"blk.2.hc_ffn_fn.weight", "layers.2.hc_ffn_fn", "model.layers.2.ffn_hc.fn"},
      {"blk.2.hc_ffn_base.weight", "layers.2.hc_ffn_base", "model.layers.2.ffn_hc.base"},
      {"blk.2.hc_ffn_scale.weight", "layers.2.hc_ffn_scale", "model.layers.2.ffn_hc.scale"},
      {"blk.2.attn_norm.weight", "layers.2.attn_norm.weight",
       "model.layers.2.input_layernorm.weight"},
      {"blk.2.ffn_norm.weight", "layers.2.ffn_norm.weight",
       "model.layers.2.post_attention_layernorm.weight"},
      {"blk.2.attn_sinks.weight", "layers.2.attn.attn_sink", "model.layers.2.self_attn.sinks"},
      {"blk.2.attn_q_a.weight", "layers.2.attn.wq_a.weight",
       "model.layers.2.self_attn.q_a_proj.weight"},
      {"blk.2.attn_q_a_norm.weight", "layers.2.attn.q_norm.weight",
       "model.layers.2.self_attn.q_a_norm.weight"},
      {"blk.2.attn_q_b.weight", "layers.2.attn.wq_b.weight",
       "model.layers.2.self_attn.q_b_proj.weight"},
      {"blk.2.attn_kv.weight", "layers.2.attn.wkv.weight",
       "model.layers.2.self_attn.kv_proj.weight"},
      {"blk.2.attn_kv_a_norm.weight", "layers.2.attn.kv_norm.weight",
       "model.layers.2.self_attn.kv_norm.weight"},
      {"blk.2.attn_output_a.weight", "layers.2.attn.wo_a.weight",
       "model.layers.2.self_attn.o_a_proj.weight"},
      {"blk.2.attn_output_b.weight", "layers.2.attn.wo_b.weight",
       "model.layers.2.self_attn.o_b_proj.weight"},
      {"blk.2.attn_compressor_ape.weight", "layers.2.attn.compressor.ape",
       "model.layers.2.self_attn.compressor.position_bias"},
      {"blk.2.attn_compressor_kv.weight", "layers.2.attn.compressor.wkv.weight",
       "model.layers.2.self_attn.compressor.kv_proj.weight"},
      {"blk.2.attn_compressor_gate.weight", "layers.2.attn.compressor.wgate.weight",
       "model.layers.2.self_attn.compressor.gate_proj.weight"},
      {"blk.2.attn_compressor_norm.weight", "layers.2.attn.compressor.norm.weight",
       "model.layers.2.self_attn.compressor.kv_norm.weight"},
      {"blk.2.indexer.attn_q_b.weight", "layers.2.attn.indexer.wq_b.weight",
       "model.layers.2.self_attn.compressor.indexer.q_b_proj.weight"},
      {"blk.2.indexer.proj.weight", "layers.2.attn.indexer.weights_proj.weight",
       "model.layers.2.self_attn.compressor.indexer.scorer.weights_proj.weight"},
      {"blk.2.indexer_compressor_ape.weight", "layers.2.attn.indexer.compressor.ape",
       "model.layers.2.self_attn.compressor.indexer.position_bias"},
      {"blk.2.indexer_compressor_kv.weight", "layers.2.attn.indexer.compressor.wkv.weight",
       "model.layers.2.self_attn.compressor.indexer.kv_proj.weight"},
      {"blk.2.indexer_compressor_gate.weight", "layers.2.attn.indexer.compressor.wgate.weight",
       "model.layers.2.self_attn.compressor.indexer.gate_proj.weight"},
      {"blk.2.indexer_compressor_norm.weight", "layers.2.attn.indexer.compressor.norm.weight",
       "model.layers.2.self_attn.compressor.indexer.kv_norm.weight"},
      {"blk.2.ffn_gate_inp.weight", "layers.2.ffn.gate.weight", "model.layers.2.mlp.gate.weight"},
      {"blk.3.exp_probs_b.bias", "layers.3.ffn.gate.bias",
       "model.layers.3.mlp.gate.e_score_correction_bias"},
      {"blk.2.ffn_gate_tid2eid.weight", "layers.2.ffn.gate.tid2eid",
       "model.layers.2.mlp.gate.tid2eid"},
      {"blk.2.ffn_gate_shexp.weight", "layers.2.ffn.shared_experts.w1.weight",
       "model.layers.2.mlp.shared_experts.gate_proj.weight"},
      {"blk.2.ffn_up_shexp.weight", "layers.2.ffn.shared_experts.w3.weight",
       "model.layers.2.mlp.shared_experts.up_proj.weight"},
      {"blk.2.ffn_down_shexp.weight", "layers.2.ffn.shared_experts.w2.weight",
       "model.layers.2.mlp.shared_experts.down_proj.weight"},
      {"blk.2.ffn_gate_exps.weight", "layers.2.ffn.experts.1.w1.weight",
       "model.layers.2.mlp.experts.gate_up_proj"},
      {"blk.2.ffn_up_exps.weight", "layers.2.ffn.experts.1.w3.weight",
       "model.layers.2.mlp.experts.gate_up_proj"},
      {"blk.2.ffn_down_exps.weight", "layers.2.ffn.experts.1.w2.weight",
       "model.layers.2.mlp.experts.down_proj"},
  };
  const model::Shape s = test_shape();
  std::map<std::string, const model::TensorSpec*> by_name;
  const auto specs = model::model_tensors(s, model::Recipe::kQ2);
  for (const auto& t : specs) by_name[t.name] = &t;
  size_t checked = 0;
  for (const Row& r : rows) {
    ASSERT_TRUE(by_name.count(r.gguf)) << r.gguf;
    auto off = source_plan(*by_name[r.gguf], s, Layout::kOfficial);
    auto hf = source_plan(*by_name[r.gguf], s, Layout::kHuggingFace);
    ASSERT_TRUE(off && hf) << r.gguf;
    // Experts: one official segment per expert (index 1 is the second); one HF tensor.
    const size_t k = off->size() > 1 ? 1 : 0;
    EXPECT_EQ((*off)[k].name, r.official) << r.gguf;
    EXPECT_EQ(hf->front().name, r.hf) << r.gguf;
    ++checked;
  }
  // Every kind of tensor of layers 2 and 3 and the top level is covered by the table.
  size_t expected = 0;
  for (const auto& t : specs)
    expected += (t.layer == 2 || t.layer == -1) && t.presence != model::Presence::kIgnored ? 1 : 0;
  EXPECT_EQ(checked, expected + 1);  // + blk.3.exp_probs_b.bias
  // HF experts: gate = first F rows of each expert's 2F, up = the next F.
  auto gate = source_plan(*by_name["blk.2.ffn_gate_exps.weight"], s, Layout::kHuggingFace);
  auto up = source_plan(*by_name["blk.2.ffn_up_exps.weight"], s, Layout::kHuggingFace);
  ASSERT_EQ(gate->size(), 4u);
  EXPECT_EQ((*gate)[1].row0, 2 * s.n_ff_exp);
  EXPECT_EQ((*up)[1].row0, 3 * s.n_ff_exp);
  EXPECT_EQ((*up)[1].n_rows, s.n_ff_exp);
}

// --- fake checkpoints -------------------------------------------------------------------------

// Reference decoders written from the format definitions (independent of numeric.cpp).
float ref_e4m3(uint8_t c) {
  const int e = (c >> 3) & 15, m = c & 7;
  if (e == 15 && m == 7) return 0.0f;
  const double v = e == 0 ? m / 512.0 : (1.0 + m / 8.0) * std::pow(2.0, e - 7);
  return static_cast<float>(c & 0x80 ? -v : v);
}
float ref_e2m1(uint8_t n) {
  static const float t[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  return n & 8 ? -t[n & 7] : t[n & 7];
}

struct Fake {
  std::vector<TensorData> tensors;
  std::map<std::string, std::vector<float>> expect_f;    // GGUF name -> values in GGUF order
  std::map<std::string, std::vector<int32_t>> expect_i;  // tid2eid
};

class Generator {
 public:
  Generator(const model::Shape& s, Layout layout)
      : s_(s), layout_(layout), rng_(layout == Layout::kOfficial ? 7 : 3) {}

  Fake build() {
    for (const model::TensorSpec& spec : model::model_tensors(s_, model::Recipe::kF32)) add(spec);
    return std::move(fake_);
  }

 private:
  static std::vector<int64_t> torch(const std::vector<uint64_t>& ne) {
    return {ne.rbegin(), ne.rend()};
  }
  static int64_t count(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  // Plain BF16 (or F32) tensor of random values; returns the decoded values.
  std::vector<float> plain(const std::string& name, std::vector<int64_t> shape, bool f32) {
    const int64_t n = count(shape);
    std::normal_distribution<float> nd(0.0f, 0.5f);
    TensorData t{name, f32 ? Dtype::kF32 : Dtype::kBF16, std::move(shape), {}};
    std::vector<float> vals(static_cast<size_t>(n));
    t.bytes.resize(static_cast<size_t>(n) * (f32 ? 4 : 2));
    for (int64_t i = 0; i < n; ++i) {
      float v = nd(rng_);
      if (f32) {
        std::memcpy(t.bytes.data() + 4 * i, &v, 4);
      } else {
        const uint16_t h = f32_to_bf16(v);
        t.bytes[static_cast<size_t>(2 * i)] = static_cast<uint8_t>(h);
        t.bytes[static_cast<size_t>(2 * i + 1)] = static_cast<uint8_t>(h >> 8);
        v = bf16_to_f32(h);
      }
      vals[static_cast<size_t>(i)] = v;
    }
    fake_.tensors.push_back(std::move(t));
    return vals;
  }
  // FP8 weight [R, C] + E8M0 block scale; returns the decoded values.
  std::vector<float> fp8(const std::string& name, int64_t r, int64_t c) {
    const int64_t br = (r + 127) / 128, bc = (c + 127) / 128;
    TensorData w{name, Dtype::kF8E4M3, {r, c}, std::vector<uint8_t>(static_cast<size_t>(r * c))};
    TensorData sc{name.substr(0, name.size() - 7) + ".scale",
                  Dtype::kF8E8M0,
                  {br, bc},
                  std::vector<uint8_t>(static_cast<size_t>(br * bc))};
    for (auto& b : w.bytes) b = static_cast<uint8_t>(rng_());
    for (auto& b : sc.bytes) b = static_cast<uint8_t>(118 + rng_() % 12);
    std::vector<float> vals(static_cast<size_t>(r * c));
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j)
        vals[static_cast<size_t>(i * c + j)] = static_cast<float>(
            ref_e4m3(w.bytes[static_cast<size_t>(i * c + j)]) *
            std::pow(2.0, sc.bytes[static_cast<size_t>((i / 128) * bc + j / 128)] - 127));
    fake_.tensors.push_back(std::move(w));
    fake_.tensors.push_back(std::move(sc));
    return vals;
  }
  // FP4 weight [R, C] packed into I8 [R, C/2] + E8M0 scale [R, C/32]; appends decoded values.
  void fp4(const std::string& name, int64_t r, int64_t c, std::vector<float>* out) {
    TensorData w{
        name, Dtype::kI8, {r, c / 2}, std::vector<uint8_t>(static_cast<size_t>(r * c / 2))};
    TensorData sc{name.substr(0, name.size() - 7) + ".scale",
                  Dtype::kF8E8M0,
                  {r, c / 32},
                  std::vector<uint8_t>(static_cast<size_t>(r * c / 32))};
    for (auto& b : w.bytes) b = static_cast<uint8_t>(rng_());
    for (auto& b : sc.bytes) b = static_cast<uint8_t>(122 + rng_() % 8);
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) {
        const uint8_t byte = w.bytes[static_cast<size_t>(i * c / 2 + j / 2)];
        out->push_back(static_cast<float>(
            ref_e2m1(j % 2 ? byte >> 4 : byte & 15) *
            std::pow(2.0, sc.bytes[static_cast<size_t>(i * c / 32 + j / 32)] - 127)));
      }
    fake_.tensors.push_back(std::move(w));
    fake_.tensors.push_back(std::move(sc));
  }

  void add(const model::TensorSpec& spec) {
    const bool hf = layout_ == Layout::kHuggingFace;
    auto plan = source_plan(spec, s_, layout_);
    ASSERT_TRUE(plan) << plan.status().to_string();
    const std::string& src = plan->front().name;
    const std::string suffix =
        spec.layer < 0 ? spec.name : spec.name.substr(spec.name.find('.', 4) + 1);
    if (spec.type == gguf::GgufType::kI32) {
      const std::vector<int64_t> shape = torch(spec.dims);
      TensorData t{src, Dtype::kI64, shape,
                   std::vector<uint8_t>(static_cast<size_t>(count(shape) * 8))};
      std::vector<int32_t> vals;
      for (int64_t i = 0; i < count(shape); ++i) {
        const int64_t v = (i * 3 + 1) % s_.n_expert;
        std::memcpy(t.bytes.data() + 8 * i, &v, 8);
        vals.push_back(static_cast<int32_t>(v));
      }
      fake_.tensors.push_back(std::move(t));
      fake_.expect_i[spec.name] = vals;
      return;
    }
    const int64_t e_count = s_.n_expert, f = s_.n_ff_exp, d = s_.n_embd;
    if (spec.role == model::TensorRole::kRoutedExpert) {
      const bool down = suffix == "ffn_down_exps.weight", up = suffix == "ffn_up_exps.weight";
      std::vector<float>& out = fake_.expect_f[spec.name];
      if (!hf) {
        for (int64_t e = 0; e < e_count; ++e)
          fp4((*plan)[static_cast<size_t>(e)].name, down ? d : f, down ? f : d, &out);
      } else if (down) {
        out = plain(src, {e_count, d, f}, false);
      } else if (!up) {  // gate: create the fused tensor, split the expectation for gate and up
        const std::vector<float> all = plain(src, {e_count, 2 * f, d}, false);
        std::vector<float>& upv =
            fake_.expect_f[spec.name.substr(0, spec.name.size() - 20) + "ffn_up_exps.weight"];
        for (int64_t e = 0; e < e_count; ++e) {
          const auto base = all.begin() + e * 2 * f * d;
          out.insert(out.end(), base, base + f * d);
          upv.insert(upv.end(), base + f * d, base + 2 * f * d);
        }
      }
      return;
    }
    static const char* kFp8[] = {
        "attn_q_a.weight",      "attn_q_b.weight",       "attn_kv.weight",
        "attn_output_a.weight", "attn_output_b.weight",  "ffn_gate_shexp.weight",
        "ffn_up_shexp.weight",  "ffn_down_shexp.weight", "indexer.attn_q_b.weight"};
    const std::vector<int64_t> shape = torch(spec.dims);
    if (!hf && std::find(std::begin(kFp8), std::end(kFp8), suffix) != std::end(kFp8)) {
      fake_.expect_f[spec.name] = fp8(src, shape[0], shape[1]);
      return;
    }
    const bool f32 =
        spec.role == model::TensorRole::kHcFn || spec.role == model::TensorRole::kHcBase ||
        spec.role == model::TensorRole::kHcScale || spec.role == model::TensorRole::kSinks ||
        spec.role == model::TensorRole::kApe || spec.role == model::TensorRole::kRouterBias;
    fake_.expect_f[spec.name] = plain(src, shape, f32);
  }

  model::Shape s_;
  Layout layout_;
  std::mt19937 rng_;
  Fake fake_;
};

// A vocabulary-only GGUF with n tokens and one merge.
std::string write_vocab(const TempDir& tmp, int n) {
  const std::string path = tmp.file("vocab.gguf");
  auto w = gguf::Writer::create(path);
  EXPECT_TRUE(w);
  std::vector<std::string> tokens;
  for (int i = 0; i < n; ++i) tokens.push_back("t" + std::to_string(i));
  EXPECT_TRUE(w->add_metadata("general.architecture", gguf::Value::string("deepseek4")).is_ok());
  EXPECT_TRUE(w->add_metadata("tokenizer.ggml.model", gguf::Value::string("gpt2")).is_ok());
  EXPECT_TRUE(w->add_metadata("tokenizer.ggml.tokens", gguf::Value::string_array(tokens)).is_ok());
  EXPECT_TRUE(w->add_metadata("tokenizer.ggml.merges", gguf::Value::string_array({"t 0"})).is_ok());
  EXPECT_TRUE(w->finish().is_ok());
  return path;
}

class ConvertCheckpoint : public ::testing::TestWithParam<Layout> {
 protected:
  void write(const Fake& fake, const json& config) {
    dir_ = tmp_.file("ckpt");
    ASSERT_TRUE(write_checkpoint(dir_, fake.tensors, config.dump(2), 4 << 20).is_ok());
  }
  // The HF run takes its tokenizer keys from a vocabulary GGUF, the official run from the
  // checkpoint's tokenizer.json.
  ConvertOptions options(model::Recipe r, const std::string& out) {
    ConvertOptions o;
    o.src_dir = dir_;
    o.output = tmp_.file(out);
    o.recipe = r;
    if (GetParam() == Layout::kHuggingFace) {
      o.vocab_gguf = write_vocab(tmp_, test_shape().n_vocab);
    } else {
      std::ofstream(dir_ + "/tokenizer.json")
          << R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2},
          "merges": ["a b"]}, "added_tokens": [{"id": 3, "content": "<s>", "special": true}]})";
    }
    o.threads = 2;
    return o;
  }
  TempDir tmp_;
  std::string dir_;
};

TEST_P(ConvertCheckpoint, F32IsExactAndQuantisedIsValid) {
  const Layout layout = GetParam();
  const model::Shape s = test_shape();
  Fake fake = Generator(s, layout).build();
  fake.tensors.push_back({"mtp.0.unused", Dtype::kF32, {2}, std::vector<uint8_t>(8)});
  write(fake, config_for(s, layout == Layout::kOfficial));

  ConvertReport report;
  ConvertOptions o = options(model::Recipe::kF32, "f32.gguf");
  Status st = convert_checkpoint(o, &report);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(report.layout, to_string(layout));
  EXPECT_EQ(report.shape, "custom");
  EXPECT_EQ(report.n_unused, 1u);
  auto r = gguf::Reader::open(o.output);
  ASSERT_TRUE(r) << r.status().to_string();
  EXPECT_TRUE(model::check_metadata(*r, s).problems.empty());
  ASSERT_NE(r->find("tokenizer.ggml.tokens"), nullptr);
  EXPECT_EQ(r->find("tokenizer.ggml.tokens")->size(), 512u);
  EXPECT_EQ(r->find("tokenizer.ggml.tokens")->at(layout == Layout::kHuggingFace ? 5 : 2).str(),
            layout == Layout::kHuggingFace ? "t5" : "ab");
  const auto specs = model::model_tensors(s, model::Recipe::kF32);
  ASSERT_EQ(r->tensors().size(), specs.size());
  for (const model::TensorSpec& spec : specs) {
    const gguf::TensorInfo* t = r->find_tensor(spec.name);
    ASSERT_NE(t, nullptr) << spec.name;
    EXPECT_EQ(t->type, spec.type) << spec.name;
    EXPECT_EQ(t->dims, spec.dims) << spec.name;
    const auto data = r->tensor_data(*t);
    if (spec.type == gguf::GgufType::kI32) {
      const auto& want = fake.expect_i.at(spec.name);
      ASSERT_EQ(data.size(), want.size() * 4) << spec.name;
      EXPECT_EQ(0, std::memcmp(data.data(), want.data(), data.size())) << spec.name;
    } else {
      const auto& want = fake.expect_f.at(spec.name);
      ASSERT_EQ(data.size(), want.size() * 4) << spec.name;
      EXPECT_EQ(0, std::memcmp(data.data(), want.data(), data.size())) << spec.name;
    }
  }

  for (model::Recipe recipe : {model::Recipe::kQ8, model::Recipe::kQ2}) {
    ConvertOptions q = options(recipe, std::string(model::to_string(recipe)) + ".gguf");
    st = convert_checkpoint(q);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    auto qr = gguf::Reader::open(q.output);
    ASSERT_TRUE(qr) << qr.status().to_string();
    const auto problems = model::check_metadata(*qr, s).problems;
    EXPECT_TRUE(problems.empty()) << problems.front();
    for (const model::TensorSpec& spec : model::model_tensors(s, recipe)) {
      const gguf::TensorInfo* t = qr->find_tensor(spec.name);
      ASSERT_NE(t, nullptr) << spec.name;
      EXPECT_EQ(t->type, spec.type) << spec.name;
      EXPECT_EQ(t->dims, spec.dims) << spec.name;
    }
    // A Q8_0 projection decodes close to the source values.
    const gguf::TensorInfo* qb = qr->find_tensor("blk.2.attn_q_b.weight");
    ASSERT_EQ(qb->type, gguf::GgufType::kQ8_0);
    std::vector<float> dec(qb->n_elements);
    ASSERT_TRUE(quant::dequantize(qb->type, qr->tensor_data(*qb).data(), dec.data(),
                                  static_cast<int64_t>(dec.size()))
                    .is_ok());
    const auto& want = fake.expect_f.at("blk.2.attn_q_b.weight");
    float amax = 0, err = 0;
    for (size_t i = 0; i < dec.size(); ++i) {
      amax = std::max(amax, std::fabs(want[i]));
      err = std::max(err, std::fabs(dec[i] - want[i]));
    }
    EXPECT_LE(err, amax / 100.0f);
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, ConvertCheckpoint,
                         ::testing::Values(Layout::kHuggingFace, Layout::kOfficial),
                         [](const ::testing::TestParamInfo<Layout>& p) {
                           return std::string(to_string(p.param));
                         });

TEST(TokenizerKeys, FromTokenizerJson) {
  TempDir tmp;
  const std::string path = tmp.file("tokenizer.json");
  std::ofstream(path) << R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "c": 3},
      "merges": ["a b", ["ab", "c"]]},
      "added_tokens": [{"id": 128803, "content": "<｜User｜>", "special": true},
                       {"id": 4, "content": "xyz", "special": false}]})";
  auto kv = tokenizer_metadata_from_json(path, 129280);
  ASSERT_TRUE(kv) << kv.status().to_string();
  std::map<std::string, gguf::Value> m(kv->begin(), kv->end());
  const gguf::Value& tokens = m.at("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 129280u);
  EXPECT_EQ(tokens.at(2).str(), "ab");
  EXPECT_EQ(tokens.at(4).str(), "xyz");
  EXPECT_EQ(tokens.at(128803).str(), "<｜User｜>");
  EXPECT_EQ(tokens.at(128821).str(), "<think>");
  EXPECT_EQ(tokens.at(128825).str(), "｜DSML｜");
  EXPECT_EQ(tokens.at(128000).str(), "<｜place▁holder▁no▁0｜>");
  EXPECT_EQ(tokens.at(129279).str(), "<｜place▁holder▁no▁1279｜>");
  const gguf::Value& merges = m.at("tokenizer.ggml.merges");
  ASSERT_EQ(merges.size(), 2u);
  EXPECT_EQ(merges.at(1).str(), "ab c");
  const gguf::Value& types = m.at("tokenizer.ggml.token_type");
  EXPECT_EQ(types.at(0).as_i64().value_or(-1), 1);       // normal
  EXPECT_EQ(types.at(4).as_i64().value_or(-1), 4);       // user-defined added token
  EXPECT_EQ(types.at(128803).as_i64().value_or(-1), 3);  // control
  // Ids beyond the vocabulary and repeated strings are errors.
  EXPECT_NE(tokenizer_metadata_from_json(path, 128000).status().message().find("beyond"),
            std::string::npos);
  std::ofstream(path) << R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
      "added_tokens": [{"id": 1, "content": "a"}]})";
  EXPECT_NE(tokenizer_metadata_from_json(path, 300).status().message().find("same string"),
            std::string::npos);
  std::ofstream(path) << R"({"model": {"type": "Unigram"}})";
  EXPECT_FALSE(tokenizer_metadata_from_json(path, 300));
  EXPECT_FALSE(tokenizer_metadata_from_json(tmp.file("missing.json"), 300));
}

// Broken checkpoints fail before any output exists, with a message naming the problem.
TEST(ConvertErrors, BrokenCheckpoints) {
  TempDir tmp;
  const model::Shape s = test_shape();
  const Fake good = Generator(s, Layout::kOfficial).build();
  const std::string vocab = write_vocab(tmp, s.n_vocab);
  int k = 0;
  auto attempt = [&](std::vector<TensorData> ts, const json& config,
                     const std::string& vocab_path) {
    const std::string dir = tmp.file("c" + std::to_string(k));
    const std::string out = tmp.file("o" + std::to_string(k++) + ".gguf");
    EXPECT_TRUE(write_checkpoint(dir, ts, config.dump(), 8 << 20).is_ok());
    ConvertOptions o{dir, out, model::Recipe::kF32, vocab_path, 1};
    Status st = convert_checkpoint(o);
    EXPECT_FALSE(std::filesystem::exists(out));
    EXPECT_FALSE(std::filesystem::exists(out + ".partial"));
    return st.is_ok() ? std::string("OK") : st.message();
  };
  const json config = config_for(s, true);
  auto without = [&](const std::string& name) {
    std::vector<TensorData> ts;
    for (const auto& t : good.tensors)
      if (t.name != name) ts.push_back(t);
    return ts;
  };
  EXPECT_NE(
      attempt(without("layers.3.attn.wkv.weight"), config, vocab).find("layers.3.attn.wkv.weight"),
      std::string::npos);
  EXPECT_NE(attempt(without("layers.1.ffn.experts.2.w2.scale"), config, vocab).find("no scale"),
            std::string::npos);
  std::vector<TensorData> reshaped = good.tensors;
  for (auto& t : reshaped)
    if (t.name == "layers.0.attn_norm.weight") t.shape = {2, t.shape[0] / 2};
  EXPECT_NE(attempt(reshaped, config, vocab).find("layers.0.attn_norm.weight"), std::string::npos);
  std::vector<TensorData> bad_ids = good.tensors;
  for (auto& t : bad_ids)
    if (t.name == "layers.0.ffn.gate.tid2eid") t.bytes[8] = 200;
  EXPECT_NE(attempt(bad_ids, config, vocab).find("expert id"), std::string::npos);
  json no_field = config;
  no_field.erase("o_groups");
  EXPECT_NE(attempt(good.tensors, no_field, vocab).find("o_groups"), std::string::npos);
  EXPECT_NE(attempt(good.tensors, config, "").find("tokenizer"), std::string::npos);
}

}  // namespace
}  // namespace ds4::convert
