// src/model/hparams.cpp: metadata keys of a model GGUF (see hparams.h).
#include "model/hparams.h"

#include <cmath>
#include <cstdio>

namespace ds4::model {
namespace {

using gguf::Value;
using gguf::ValueType;

constexpr std::string_view kArch = "deepseek4.";

std::string key(std::string_view k) { return std::string(kArch) + std::string(k); }

// The u32-valued dimension keys, with the shape field each one carries.
struct U32Key {
  const char* name;
  int Shape::*field;
};
constexpr U32Key kU32Keys[] = {
    {"block_count", &Shape::n_layer},
    {"embedding_length", &Shape::n_embd},
    {"vocab_size", &Shape::n_vocab},
    {"attention.head_count", &Shape::n_head},
    {"attention.key_length", &Shape::head_dim},
    {"attention.value_length", &Shape::head_dim},
    {"rope.dimension_count", &Shape::n_rot},
    {"attention.q_lora_rank", &Shape::n_lora_q},
    {"attention.output_lora_rank", &Shape::n_lora_o},
    {"attention.output_group_count", &Shape::n_out_group},
    {"expert_count", &Shape::n_expert},
    {"expert_used_count", &Shape::n_expert_used},
    {"expert_feed_forward_length", &Shape::n_ff_exp},
    {"expert_shared_count", &Shape::n_expert_shared},
    {"hash_layer_count", &Shape::n_hash_layer},
    {"attention.sliding_window", &Shape::n_swa},
    {"attention.indexer.head_count", &Shape::n_indexer_head},
    {"attention.indexer.key_length", &Shape::indexer_head_dim},
    {"attention.indexer.top_k", &Shape::indexer_top_k},
    {"hyper_connection.count", &Shape::n_hc},
    {"hyper_connection.sinkhorn_iterations", &Shape::n_sinkhorn},
};

// Every shape has one KV head (multi-query attention); ds4 requires the key to say so.
constexpr uint32_t kHeadCountKv = 1;

struct FloatKey {
  const char* name;
  double value;
  bool required;  // ds4 refuses a file without it; an optional key falls back to its value
};
// Constants every shape shares (f32-like: f32, f64, u32 or i32); expert_weights_scale varies and
// is handled separately. ds4 reads the three YaRN keys only when present with such a type.
constexpr FloatKey kFloatKeys[] = {
    {"rope.freq_base", kRopeFreqBase, true},
    {"rope.scaling.factor", kYarnFactor, false},
    {"rope.scaling.yarn_beta_fast", kYarnBetaFast, false},
    {"rope.scaling.yarn_beta_slow", kYarnBetaSlow, false},
    {"attention.compress_rope_freq_base", kCompressRopeFreqBase, true},
    {"attention.layer_norm_rms_epsilon", kRmsEps, true},
    {"hyper_connection.epsilon", kHcEps, true},
};

bool close(double got, double want) {
  return std::fabs(got - want) <= std::max(1.0, std::fabs(want)) * 1e-6;
}

std::string fmt(const char* f, const std::string& a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a.c_str(), b, c);
  return buf;
}

bool same_dims(const Shape& a, const Shape& b) {
  for (const U32Key& k : kU32Keys) {
    if (a.*k.field != b.*k.field) return false;
  }
  return a.dense_first_layers == b.dense_first_layers &&
         a.expert_weights_scale == b.expert_weights_scale;
}

}  // namespace

std::vector<std::pair<std::string, Value>> shape_metadata(const Shape& s) {
  std::vector<std::pair<std::string, Value>> kv;
  kv.emplace_back("general.architecture", Value::string("deepseek4"));
  kv.emplace_back("general.name", Value::string(std::string("DeepSeek V4 ") + std::string(s.name)));
  if (s.kind == ShapeKind::kTest)
    kv.emplace_back(std::string(kShapeNameKey), Value::string(std::string(s.name)));
  for (const U32Key& k : kU32Keys)
    kv.emplace_back(key(k.name), Value::u32(static_cast<uint32_t>(s.*k.field)));
  kv.emplace_back(key("attention.head_count_kv"), Value::u32(kHeadCountKv));
  kv.emplace_back(key("context_length"), Value::u32(kMaxContext));
  std::vector<uint32_t> ratios;
  std::vector<float> clamps;
  for (int il = 0; il < s.n_layer; ++il) {
    ratios.push_back(static_cast<uint32_t>(s.compress_ratio(il)));
    clamps.push_back(kSwigluClamp);
  }
  kv.emplace_back(key("attention.compress_ratios"), Value::u32_array(ratios));
  kv.emplace_back(key("swiglu_clamp_exp"), Value::f32_array(clamps));
  kv.emplace_back(key("rope.scaling.original_context_length"), Value::u32(kYarnOrigContext));
  for (const FloatKey& k : kFloatKeys)
    kv.emplace_back(key(k.name), Value::f32(static_cast<float>(k.value)));
  kv.emplace_back(key("expert_weights_scale"), Value::f32(s.expert_weights_scale));
  kv.emplace_back(key("expert_weights_norm"), Value::boolean(true));
  return kv;
}

Result<Shape> shape_from_metadata(const gguf::Reader& file) {
  Shape s{};
  s.name = "custom";
  s.kind = ShapeKind::kTest;
  for (const U32Key& k : kU32Keys) {
    auto v = file.get_u32(key(k.name));
    if (!v) return v.status();
    if (*v > (1u << 30))
      return Status::invalid_model("metadata %s = %u is out of range", key(k.name).c_str(), *v);
    s.*k.field = static_cast<int>(*v);
  }
  const Value* ratios = file.find(key("attention.compress_ratios"));
  const auto r = ratios ? ratios->as_i64_array() : std::nullopt;
  if (!r || r->empty())
    return Status::invalid_model("missing or malformed %s",
                                 key("attention.compress_ratios").c_str());
  s.dense_first_layers = (*r)[0] == 0;
  auto scale = file.get_f64_like(key("expert_weights_scale"));
  if (!scale) return scale.status();
  s.expert_weights_scale = static_cast<float>(*scale);
  for (const Shape* b : {&kFlash, &kPro}) {
    if (same_dims(s, *b)) return *b;
  }
  const Value* name = file.find(kShapeNameKey);
  if (name == nullptr || !name->as_string()) {
    return Status::invalid_model(
        "dimensions match neither DeepSeek V4 Flash nor Pro (%d layers, width %d) "
        "and the file does not declare a test shape (%s)",
        s.n_layer, s.n_embd, std::string(kShapeNameKey).c_str());
  }
  if (const auto builtin = builtin_shape(*name->as_string()); builtin && same_dims(s, *builtin))
    return *builtin;
  return s;
}

MetadataCheck check_metadata(const gguf::Reader& file, const Shape& s) {
  MetadataCheck out;
  std::vector<std::string>& bad = out.problems;
  for (const U32Key& k : kU32Keys) {
    const auto v = file.get_u32(key(k.name));
    if (!v) {
      bad.push_back(v.status().message());
    } else if (static_cast<int>(*v) != s.*k.field) {
      bad.push_back(fmt("%s is %.0f, expected %.0f", key(k.name), *v, s.*k.field));
    }
  }
  if (const auto v = file.get_u32(key("attention.head_count_kv")); !v) {
    bad.push_back(v.status().message());
  } else if (*v != kHeadCountKv) {
    bad.push_back(
        fmt("%s is %.0f, expected %.0f", key("attention.head_count_kv"), *v, kHeadCountKv));
  }
  const Value* ratios = file.find(key("attention.compress_ratios"));
  const auto r =
      ratios && (ratios->elem_type() == ValueType::kU32 || ratios->elem_type() == ValueType::kI32)
          ? ratios->as_i64_array()
          : std::nullopt;
  if (!r || static_cast<int>(r->size()) < s.n_layer) {
    bad.push_back(fmt("%s must be a u32/i32 array of at least %.0f entries",
                      key("attention.compress_ratios"), s.n_layer));
  } else {
    for (int il = 0; il < s.n_layer; ++il) {
      if ((*r)[static_cast<size_t>(il)] != s.compress_ratio(il)) {
        bad.push_back(fmt("%s[%.0f] is %.0f", key("attention.compress_ratios"), il,
                          static_cast<double>((*r)[static_cast<size_t>(il)])) +
                      " (expected " + std::to_string(s.compress_ratio(il)) + ")");
      }
    }
  }
  const Value* clamps = file.find(key("swiglu_clamp_exp"));
  const auto c =
      clamps && (clamps->elem_type() == ValueType::kF32 || clamps->elem_type() == ValueType::kF64)
          ? clamps->as_f64_array()
          : std::nullopt;
  if (!c || static_cast<int>(c->size()) < s.n_layer) {
    bad.push_back(fmt("%s must be an f32/f64 array of at least %.0f entries",
                      key("swiglu_clamp_exp"), s.n_layer));
  } else {
    for (int il = 0; il < s.n_layer; ++il) {
      if (!close((*c)[static_cast<size_t>(il)], kSwigluClamp)) {
        bad.push_back(fmt("%s[%.0f] is %g (expected 10)", key("swiglu_clamp_exp"), il,
                          (*c)[static_cast<size_t>(il)]));
      }
    }
  }
  // Optional keys: absent, or present with a type ds4 does not read, the engine's value applies.
  auto ignored = [&](const std::string& k, const char* types) {
    out.notes.push_back("ignored metadata key " + k + " (not " + types + "; the value " +
                        "the engine uses applies)");
  };
  const std::string orig_ctx = key("rope.scaling.original_context_length");
  if (const Value* v = file.find(orig_ctx); v != nullptr) {
    if (const auto n = file.get_u64_like(orig_ctx); !n) {
      ignored(orig_ctx, "u32 or u64");
    } else if (*n != static_cast<uint64_t>(kYarnOrigContext)) {
      bad.push_back(
          fmt("%s is %.0f, expected %.0f", orig_ctx, static_cast<double>(*n), kYarnOrigContext));
    }
  }
  auto check_float = [&](const std::string& k, double want, bool required) {
    if (!required && file.find(k) == nullptr) return;
    if (const auto v = file.get_f64_like(k); !v) {
      if (required) {
        bad.push_back(v.status().message());
      } else {
        ignored(k, "f32, f64, u32 or i32");
      }
    } else if (!close(*v, want)) {
      bad.push_back(fmt("%s is %g, expected %g", k, *v, want));
    }
  };
  for (const FloatKey& k : kFloatKeys) check_float(key(k.name), k.value, k.required);
  check_float(key("expert_weights_scale"), s.expert_weights_scale, true);
  if (const auto v = file.get_bool(key("expert_weights_norm")); !v) {
    bad.push_back(v.status().message());
  } else if (!*v) {
    bad.push_back(key("expert_weights_norm") + " must be true");
  }
  // ds4 reads the group keys only as u32 (a value of another type is never looked at).
  for (const char* optional : {"expert_group_count", "expert_group_used_count"}) {
    const Value* v = file.find(key(optional));
    if (v == nullptr) continue;
    if (v->type() != ValueType::kU32) {
      ignored(key(optional), "u32");
    } else if (v->raw_u64() != 0) {
      bad.push_back(key(optional) +
                    " must be 0 when present as u32 (expert groups are unsupported)");
    }
  }
  if (s.kind == ShapeKind::kTest) {
    if (const std::string_view p = shape_problem(s); !p.empty())
      bad.push_back("test shape: " + std::string(p));
  }
  return out;
}

}  // namespace ds4::model
