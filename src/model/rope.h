// src/model/rope.h: rotary position embedding of DeepSeek V4 (model.md §4.6, semantics-diff §C.2
// item 4): the last 64 dims of a head rotate in adjacent pairs; sliding layers use plain RoPE with
// base 10000, compressed layers base 160000 with YaRN (factor 16, ramp over pairs 15..25) and no
// YaRN magnitude scaling. Angles follow the official/HF rule: a per-pair float32 inv_freq table and
// theta = float32(pos * inv_freq) -- not ds4's iterated products.
// Owns: the inv_freq tables and the rotation of one 64-dim tail. Does not own: where RoPE applies.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "backend/rope.h"

namespace ds4::model {

using backend::kRopePairs;

struct RopeTable {
  std::array<float, kRopePairs> inv_freq;
};

// The table of sliding (dense) layers or of compressed layers.
RopeTable rope_table(bool compressed);

// cos/sin of the kRopePairs angles at `pos`.
void rope_cos_sin(const RopeTable& t, int64_t pos, std::span<float, kRopePairs> cos,
                  std::span<float, kRopePairs> sin);

// Rotates the 64-dim tail (x[2p], x[2p+1]) by the angles at `pos`; `inverse` rotates back.
void apply_rope(const RopeTable& t, int64_t pos, std::span<float> tail64, bool inverse);

// The table as the backend ops take it.
backend::RopeParams to_params(const RopeTable& t);

}  // namespace ds4::model
