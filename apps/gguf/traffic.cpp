// apps/gguf/traffic.cpp: `ds4-gguf traffic`: the bytes one decoded token reads, from the model
// inventory (model/inventory.h) of a shape and recipe -- the bytes-per-token model behind the
// bandwidth figures of bench/*.md. Weights: every tensor that is applied to every token counts in
// full; routed experts count n_expert_used / n_expert of their bytes; the embedding and the hash
// routing table count one token's row. KV side at context L, per layer: the raw window
// (min(L, window) rows), the compressed rows attention visits (ratio 128: L / 128; ratio 4: at
// most the indexer's top-k) and, on ratio-4 layers, every indexer key the scores read (L / 4);
// rows are 4-byte floats, as both backends keep them.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <string>

#include "apps/gguf/commands.h"
#include "gguf/types.h"
#include "model/inventory.h"
#include "model/shape.h"

namespace ds4::apps::gguf_tool {
namespace {

std::string category(const model::TensorSpec& t) {
  using R = model::TensorRole;
  switch (t.role) {
    case R::kRoutedExpert: return "routed experts (" + std::string(gguf::to_string(t.type)) + ")";
    case R::kEmbedding: return "embedding (one row)";
    case R::kTokenToExpert: return "hash routing table (one row)";
    case R::kRouter:
    case R::kRouterBias: return "router";
    case R::kHcFn:
    case R::kHcBase:
    case R::kHcScale: return "hyper-connections";
    default: break;
  }
  if (t.name.rfind("output", 0) == 0) return "output head and norm";
  if (t.name.find("shexp") != std::string::npos) return "shared expert";
  return "attention, compressor, indexer projections and norms";
}

// KV-side bytes one token reads at context `ctx`.
double kv_bytes(const model::Shape& s, int64_t ctx) {
  const double row = 4.0 * s.head_dim, key = 4.0 * s.indexer_head_dim;
  double b = 0;
  for (int il = 0; il < s.n_layer; ++il) {
    b += static_cast<double>(std::min<int64_t>(ctx, s.n_swa)) * row;
    const int r = s.compress_ratio(il);
    if (r == 128) b += static_cast<double>(ctx / 128) * row;
    if (r == 4) {
      b += static_cast<double>(std::min<int64_t>(ctx / 4, s.indexer_top_k)) * row;
      b += static_cast<double>(ctx / 4) * key;
    }
  }
  return b;
}

}  // namespace

int run_traffic(const TrafficOptions& opts) {
  const auto shape = shape_arg("traffic", opts.shape);
  if (!shape) return 2;
  const auto recipe = recipe_arg("traffic", opts.quant);
  if (!recipe) return 2;
  std::map<std::string, std::pair<double, double>> parts;  // per token, in the file
  double per_token = 0, file = 0;
  for (const model::TensorSpec& t : model::model_tensors(*shape, *recipe)) {
    const double bytes = static_cast<double>(*gguf::byte_size(t.type, t.n_elements()));
    double used = bytes;
    if (t.role == model::TensorRole::kRoutedExpert) {
      used = bytes * shape->n_expert_used / shape->n_expert;
    } else if (t.role == model::TensorRole::kEmbedding ||
               t.role == model::TensorRole::kTokenToExpert) {
      used = bytes / shape->n_vocab;
    }
    auto& p = parts[category(t)];
    p.first += used;
    p.second += bytes;
    per_token += used;
    file += bytes;
  }
  std::printf("decode traffic: shape %s, recipe %s (%d of %d experts per token)\n",
              opts.shape.c_str(), opts.quant.c_str(), shape->n_expert_used, shape->n_expert);
  std::printf("%-54s %14s %14s\n", "weights", "MB per token", "MB in file");
  for (const auto& [name, p] : parts)
    std::printf("%-54s %14.1f %14.1f\n", name.c_str(), p.first / 1e6, p.second / 1e6);
  std::printf("%-54s %14.1f %14.1f\n", "total", per_token / 1e6, file / 1e6);
  std::printf("weights_bytes_per_token %.0f\n", per_token);
  std::printf("%10s %14s %16s", "context", "KV MB/token", "total GB/token");
  if (opts.gbps > 0) std::printf(" %18s", "tok/s at roofline");
  std::printf("\n");
  for (const int64_t ctx : opts.contexts) {
    const double kv = kv_bytes(*shape, ctx), total = per_token + kv;
    std::printf("%10" PRId64 " %14.1f %16.3f", ctx, kv / 1e6, total / 1e9);
    if (opts.gbps > 0) std::printf(" %18.0f", opts.gbps * 1e9 / total);
    std::printf("\n");
  }
  return 0;
}

}  // namespace ds4::apps::gguf_tool
