// src/model/shape.h: what a DeepSeek V4 network looks like -- its dimensions and per-layer kinds.
// Owns: the published Flash and Pro shapes (model.md §1, §10), the small test shapes that keep
// every per-head dimension and every layer kind but shrink the counts, and the per-layer rules
// (compression ratio, hash routing).
// Does not own: tensor names and types (inventory.h) or GGUF metadata (hparams.h).
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace ds4::model {

enum class ShapeKind { kFlash, kPro, kTest };

// Kinds of attention a layer can have (model.md §1.2).
enum class LayerKind {
  kSliding,  // ratio 0: raw sliding window only
  kCsa,      // ratio 4: compressed rows + lightning indexer top-k
  kHca,      // ratio 128: compressed rows, no indexer
};

struct Shape {
  std::string_view name;  // "flash", "pro", "tiny", ...
  ShapeKind kind;
  int n_layer;
  int n_embd;
  int n_vocab;
  int n_head;
  int head_dim;  // key = value = 512 in every shape (kernels specialise on it)
  int n_rot;     // RoPE dims at the end of each head: 64
  int n_out_group;
  int n_lora_q;
  int n_lora_o;
  int n_expert;
  int n_expert_used;
  int n_expert_shared;
  int n_ff_exp;
  int n_hash_layer;  // layers [0, n_hash_layer) route by token id
  int n_swa;         // sliding window, in tokens (the query's own row included)
  int n_indexer_head;
  int indexer_head_dim;  // 128
  int indexer_top_k;
  int n_hc;  // hyper-connection streams: 4
  int n_sinkhorn;
  bool dense_first_layers;  // Flash: layers 0 and 1 have ratio 0; Pro: ratio 128
  float expert_weights_scale;

  int compress_ratio(int il) const {
    if (il < 2) return dense_first_layers ? 0 : 128;
    return il % 2 == 0 ? 4 : 128;
  }
  LayerKind layer_kind(int il) const {
    const int r = compress_ratio(il);
    return r == 0 ? LayerKind::kSliding : r == 4 ? LayerKind::kCsa : LayerKind::kHca;
  }
  bool hash_routed(int il) const { return il < n_hash_layer; }
  int heads_per_group() const { return n_head / n_out_group; }
  int hc_mix() const { return 2 * n_hc + n_hc * n_hc; }  // [pre(4), post(4), comb(16)]
  // Width of a layer's attention compressor projections: ratio-4 layers carry two lanes.
  int compressor_width(int il) const { return (compress_ratio(il) == 4 ? 2 : 1) * head_dim; }
};

// Constants shared by every shape (model.md §1.1): the kernels and the RoPE tables depend on them.
inline constexpr int kHeadDim = 512;
inline constexpr int kRotDims = 64;
inline constexpr int kIndexerHeadDim = 128;
inline constexpr int kHcStreams = 4;
inline constexpr int kSinkhornIters = 20;
inline constexpr float kRmsEps = 1e-6f;
inline constexpr float kHcEps = 1e-6f;
inline constexpr float kSwigluClamp = 10.0f;
inline constexpr float kRopeFreqBase = 10000.0f;
inline constexpr float kCompressRopeFreqBase = 160000.0f;
inline constexpr float kYarnFactor = 16.0f;
inline constexpr float kYarnBetaFast = 32.0f;
inline constexpr float kYarnBetaSlow = 1.0f;
inline constexpr int kYarnOrigContext = 65536;
inline constexpr int kMaxContext = 1048576;

extern const Shape kFlash;
extern const Shape kPro;
// Test shapes: same per-head structure, small counts; every layer kind and hash routing appear.
extern const Shape kTiny;   // 6 layers: sliding, sliding, CSA+hash, HCA, CSA, HCA
extern const Shape kSmall;  // 8 layers, wider, more experts: a mid-size CPU benchmark shape

std::span<const Shape* const> builtin_shapes();
std::optional<Shape> builtin_shape(std::string_view name);

// A contiguous run of layers (distributed inference, features.md §10.1): the slice embeds the
// tokens when it starts at layer 0 (else it takes the hidden state of the slice before it), and
// ends with the output head (logits) or hands its hidden state on.
struct LayerRange {
  int begin = 0;     // first layer
  int end = 0;       // one past the last layer
  bool head = true;  // computes the logits
  bool operator==(const LayerRange&) const = default;
};
inline LayerRange full_range(const Shape& s) { return {0, s.n_layer, true}; }

// Structural validity of a (test) shape: divisibility the formats and kernels need, per-head
// constants, top-k and window bounds. Returns an empty string when valid, else the first problem.
std::string_view shape_problem(const Shape& s);

}  // namespace ds4::model
