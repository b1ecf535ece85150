// Protects: the DSV4 session payload (model.md §5.3, version 2 in this engine). A snapshot must
// come back bit for bit; the bytes must sit exactly where the spec puts them (checked against an
// independent serializer written from the spec, not from snapshot.cpp); and every way a payload
// can be short, long or inconsistent must produce a Status whose message names the problem --
// never a crash or an out-of-bounds read (the ASan build runs these too).
#include "kv/snapshot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/shape.h"

namespace ds4::kv {
namespace {

using model::Shape;

constexpr uint32_t kChunk = 32;

// ---- deterministic contents ----

struct Rng {
  uint64_t s;
  uint64_t next() {  // splitmix64
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

// Floats in [-2, 2) plus a few values a lossy path would mangle (-0, a denormal, infinities, a
// NaN with a payload, the -1e30 frontier filler). Compared bit for bit, never with ==.
std::vector<float> random_floats(size_t n, Rng& rng) {
  std::vector<float> v(n);
  for (float& f : v) {
    f = static_cast<float>(static_cast<int64_t>(rng.next() >> 40) - (int64_t{1} << 23)) /
        static_cast<float>(1 << 22);
  }
  const float specials[] = {-0.0f,
                            std::bit_cast<float>(uint32_t{1}),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::bit_cast<float>(uint32_t{0x7fc01234}),
                            -1e30f};
  for (size_t i = 0; i < std::size(specials) && i < n; ++i) {
    v[static_cast<size_t>(rng.next() % n)] = specials[i];
  }
  return v;
}

uint32_t window_of(const Shape& s, uint32_t ctx) {
  return std::min(static_cast<uint32_t>(s.n_swa), ctx);
}
size_t frontier_of(const Shape& s, int il) {
  const int r = s.compress_ratio(il);
  return r == 0 ? 0 : static_cast<size_t>((r == 4 ? 2 : 1) * r) * s.compressor_width(il);
}

// A snapshot whose sizes agree with `s`, `t` tokens and context `ctx`.
Snapshot make_snapshot(const Shape& s, uint32_t t, uint32_t ctx, uint32_t chunk = kChunk,
                       uint64_t seed = 1) {
  Rng rng{seed};
  Snapshot snap;
  snap.n_ctx = ctx;
  snap.prefill_chunk = chunk;
  snap.tokens.resize(t);
  for (int32_t& tok : snap.tokens) tok = static_cast<int32_t>(rng.next() % s.n_vocab);
  snap.tokens[0] = s.n_vocab - 1;  // the largest valid id
  if (t > 1) snap.tokens[1] = 0;
  snap.logits = random_floats(static_cast<size_t>(s.n_vocab), rng);
  const uint32_t live = std::min(t, window_of(s, ctx));
  snap.layers.resize(static_cast<size_t>(s.n_layer));
  for (int il = 0; il < s.n_layer; ++il) {
    backend::LayerState& l = snap.layers[static_cast<size_t>(il)];
    const int r = s.compress_ratio(il);
    l.n_tokens = static_cast<int32_t>(t);
    l.raw = random_floats(size_t{live} * 512, rng);
    if (r != 0) {
      l.comp = random_floats(size_t{t / static_cast<uint32_t>(r)} * 512, rng);
      l.comp_kv = random_floats(frontier_of(s, il), rng);
      l.comp_score = random_floats(frontier_of(s, il), rng);
    }
    if (r == 4) {
      l.index = random_floats(size_t{t / 4} * 128, rng);
      l.index_kv = random_floats(8 * 256, rng);
      l.index_score = random_floats(8 * 256, rng);
    }
  }
  return snap;
}

// ---- an independent serializer, written from model.md §5.3 ----

struct SpecWriter {
  std::vector<uint8_t> b;
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void f32(const std::vector<float>& v) {
    for (float f : v) u32(std::bit_cast<uint32_t>(f));
  }
};

std::vector<uint8_t> spec_encode(const Shape& s, const Snapshot& snap) {
  const auto t = static_cast<uint32_t>(snap.tokens.size());
  const uint32_t w = window_of(s, snap.n_ctx);
  SpecWriter o;
  for (uint32_t v : {0x34565344u, 2u, snap.n_ctx, snap.prefill_chunk, w, w, snap.n_ctx / 4 + 2, t,
                     static_cast<uint32_t>(s.n_layer), 512u, 128u, static_cast<uint32_t>(s.n_vocab),
                     std::min(t, w)}) {
    o.u32(v);
  }
  for (int32_t tok : snap.tokens) o.u32(static_cast<uint32_t>(tok));
  o.f32(snap.logits);
  for (int il = 0; il < s.n_layer; ++il) {
    const int r = s.compress_ratio(il);
    o.u32(r == 0 ? 0 : t / static_cast<uint32_t>(r));
  }
  for (int il = 0; il < s.n_layer; ++il) o.u32(s.compress_ratio(il) == 4 ? t / 4 : 0);
  for (int il = 0; il < s.n_layer; ++il) {
    const backend::LayerState& l = snap.layers[static_cast<size_t>(il)];
    o.f32(l.raw);
    if (s.compress_ratio(il) != 0) {
      o.f32(l.comp);
      o.f32(l.comp_kv);
      o.f32(l.comp_score);
    }
    if (s.compress_ratio(il) == 4) {
      o.f32(l.index);
      o.f32(l.index_kv);
      o.f32(l.index_score);
    }
  }
  return o.b;
}

// Where each section of a payload ends, per the spec (for truncation messages and offsets).
struct Sections {
  size_t header = 52, tokens, logits, comp_counts, index_counts, end;
  std::vector<size_t> layer_parts;  // end of every per-layer block (raw, comp, kv, score, ...)
};

Sections sections_of(const Shape& s, uint32_t t, uint32_t ctx) {
  Sections x;
  x.tokens = x.header + 4ull * t;
  x.logits = x.tokens + 4ull * s.n_vocab;
  x.comp_counts = x.logits + 4ull * s.n_layer;
  x.index_counts = x.comp_counts + 4ull * s.n_layer;
  size_t at = x.index_counts;
  const uint32_t live = std::min(t, window_of(s, ctx));
  for (int il = 0; il < s.n_layer; ++il) {
    const int r = s.compress_ratio(il);
    std::vector<size_t> parts = {size_t{live} * 512};
    if (r != 0) {
      parts.insert(parts.end(), {size_t{t / static_cast<uint32_t>(r)} * 512, frontier_of(s, il),
                                 frontier_of(s, il)});
    }
    if (r == 4) parts.insert(parts.end(), {size_t{t / 4} * 128, 8 * 256, 8 * 256});
    for (size_t floats : parts) {
      at += 4 * floats;
      x.layer_parts.push_back(at);
    }
  }
  x.end = at;
  return x;
}

// ---- helpers ----

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

void expect_equal(const Snapshot& got, const Snapshot& want) {
  EXPECT_EQ(got.n_ctx, want.n_ctx);
  EXPECT_EQ(got.prefill_chunk, want.prefill_chunk);
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_TRUE(same_bits(got.logits, want.logits));
  ASSERT_EQ(got.layers.size(), want.layers.size());
  for (size_t il = 0; il < want.layers.size(); ++il) {
    SCOPED_TRACE("layer " + std::to_string(il));
    const backend::LayerState& g = got.layers[il];
    const backend::LayerState& w = want.layers[il];
    EXPECT_EQ(g.n_tokens, static_cast<int32_t>(want.tokens.size()));
    EXPECT_TRUE(same_bits(g.raw, w.raw));
    EXPECT_TRUE(same_bits(g.comp, w.comp));
    EXPECT_TRUE(same_bits(g.comp_kv, w.comp_kv));
    EXPECT_TRUE(same_bits(g.comp_score, w.comp_score));
    EXPECT_TRUE(same_bits(g.index, w.index));
    EXPECT_TRUE(same_bits(g.index_kv, w.index_kv));
    EXPECT_TRUE(same_bits(g.index_score, w.index_score));
  }
}

uint32_t get_u32(const std::vector<uint8_t>& b, size_t at) {
  return uint32_t{b.at(at)} | uint32_t{b.at(at + 1)} << 8 | uint32_t{b.at(at + 2)} << 16 |
         uint32_t{b.at(at + 3)} << 24;
}
void put_u32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    b.at(at + static_cast<size_t>(i)) = static_cast<uint8_t>(v >> (8 * i));
}

Status decode_status(std::span<const uint8_t> b, const Shape& s, LoadTarget target) {
  auto r = decode_snapshot(b, s, target);
  return r.is_ok() ? Status::ok() : r.status();
}

// ---- round trips and layout ----

struct Case {
  uint32_t t, ctx;
};

TEST(Snapshot, RoundTripIsExactForTiny) {
  // Tiny's window is 16: T below, at and above it; multiples of 4 and not; T >= 128 so the
  // ratio-128 layers hold a compressed row; T = ctx - 1, the largest a session can hold.
  for (const Case c : {Case{1, 64}, Case{5, 64}, Case{16, 64}, Case{37, 64}, Case{40, 64},
                       Case{63, 64}, Case{128, 256}, Case{130, 256}, Case{5, 8}}) {
    SCOPED_TRACE("T=" + std::to_string(c.t) + " ctx=" + std::to_string(c.ctx));
    const Snapshot snap = make_snapshot(model::kTiny, c.t, c.ctx, kChunk, c.t);
    const std::vector<uint8_t> bytes = encode_snapshot(model::kTiny, snap);
    EXPECT_EQ(bytes.size(), snapshot_bytes(model::kTiny, snap));
    EXPECT_EQ(bytes.size(), snapshot_bytes(model::kTiny, c.ctx, c.t));
    EXPECT_EQ(bytes.size(), sections_of(model::kTiny, c.t, c.ctx).end);
    EXPECT_TRUE(bytes == spec_encode(model::kTiny, snap)) << "layout differs from model.md §5.3";
    auto r = decode_snapshot(bytes, model::kTiny, {c.ctx, kChunk});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    expect_equal(*r, snap);
    EXPECT_TRUE(encode_snapshot(model::kTiny, *r) == bytes);
  }
}

TEST(Snapshot, RoundTripIsExactForSmall) {
  // Small: 8 layers, window 128, so T = 130 leaves the window and fills every layer kind.
  const Snapshot snap = make_snapshot(model::kSmall, 130, 256, 64, 7);
  const std::vector<uint8_t> bytes = encode_snapshot(model::kSmall, snap);
  EXPECT_EQ(bytes.size(), snapshot_bytes(model::kSmall, snap));
  EXPECT_EQ(bytes.size(), sections_of(model::kSmall, 130, 256).end);
  EXPECT_TRUE(bytes == spec_encode(model::kSmall, snap));
  EXPECT_EQ(get_u32(bytes, 48), 128u);  // live raw rows = min(T, window)
  auto r = decode_snapshot(bytes, model::kSmall, {256, 64});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_equal(*r, snap);
}

TEST(Snapshot, AViewReadsTheLayersWhereTheyLieAtAnyAlignment) {
  const Snapshot snap = make_snapshot(model::kSmall, 130, 256, 64, 9);
  const std::vector<uint8_t> bytes = encode_snapshot(model::kSmall, snap);
  for (const size_t lead : {size_t{0}, size_t{1}, size_t{3}}) {
    SCOPED_TRACE("payload at offset " + std::to_string(lead));
    std::vector<uint8_t> buf(lead + bytes.size());
    std::copy(bytes.begin(), bytes.end(), buf.begin() + static_cast<ptrdiff_t>(lead));
    const std::span<const uint8_t> in = std::span<const uint8_t>(buf).subspan(lead);
    auto v = view_snapshot(in, model::kSmall, {256, 64});
    ASSERT_TRUE(v.is_ok()) << v.status().to_string();
    EXPECT_EQ(v->tokens, snap.tokens);
    EXPECT_TRUE(same_bits(v->logits, snap.logits));
    ASSERT_EQ(v->layers.size(), snap.layers.size());
    const size_t end = sections_of(model::kSmall, 130, 256).end;
    for (size_t il = 0; il < snap.layers.size(); ++il) {
      const backend::LayerStateView& l = v->layers[il];
      for (const backend::FloatBytes* part :
           {&l.raw, &l.comp, &l.comp_kv, &l.comp_score, &l.index, &l.index_kv, &l.index_score}) {
        if (part->empty()) continue;
        EXPECT_GE(part->data, in.data());  // in place: inside the caller's bytes
        EXPECT_LE(part->data + 4 * part->count, in.data() + end);
      }
      const backend::LayerState got = backend::to_state(l);
      const backend::LayerState& want = snap.layers[il];
      EXPECT_TRUE(same_bits(got.raw, want.raw) && same_bits(got.comp, want.comp) &&
                  same_bits(got.comp_kv, want.comp_kv) && same_bits(got.index, want.index) &&
                  same_bits(got.index_score, want.index_score))
          << "layer " << il;
    }
  }
}

TEST(Snapshot, HeaderFieldsSitAtTheirOffsets) {
  const Shape& s = model::kTiny;
  const Snapshot snap = make_snapshot(s, 37, 64);
  const std::vector<uint8_t> b = encode_snapshot(s, snap);
  ASSERT_GE(b.size(), 52u);
  EXPECT_EQ(b[0], 'D');
  EXPECT_EQ(b[1], 'S');
  EXPECT_EQ(b[2], 'V');
  EXPECT_EQ(b[3], '4');
  EXPECT_EQ(get_u32(b, 0), 0x34565344u);
  EXPECT_EQ(get_u32(b, 4), 2u);        // version
  EXPECT_EQ(get_u32(b, 8), 64u);       // saved ctx
  EXPECT_EQ(get_u32(b, 12), kChunk);   // prefill chunk
  EXPECT_EQ(get_u32(b, 16), 16u);      // raw ring capacity = min(n_swa, ctx)
  EXPECT_EQ(get_u32(b, 20), 16u);      // raw window
  EXPECT_EQ(get_u32(b, 24), 18u);      // compressed capacity = ctx / 4 + 2
  EXPECT_EQ(get_u32(b, 28), 37u);      // T
  EXPECT_EQ(get_u32(b, 32), 6u);       // n_layer
  EXPECT_EQ(get_u32(b, 36), 512u);     // head dim
  EXPECT_EQ(get_u32(b, 40), 128u);     // indexer head dim
  EXPECT_EQ(get_u32(b, 44), 129280u);  // vocab
  EXPECT_EQ(get_u32(b, 48), 16u);      // live raw rows = min(T, window)

  const Sections x = sections_of(s, 37, 64);
  EXPECT_EQ(get_u32(b, 52), static_cast<uint32_t>(s.n_vocab - 1));  // token 0
  EXPECT_EQ(get_u32(b, 56), 0u);                                    // token 1
  EXPECT_EQ(get_u32(b, x.tokens - 4), static_cast<uint32_t>(snap.tokens.back()));
  EXPECT_EQ(get_u32(b, x.tokens), std::bit_cast<uint32_t>(snap.logits.front()));
  EXPECT_EQ(get_u32(b, x.logits - 4), std::bit_cast<uint32_t>(snap.logits.back()));
  // Row counts: layers 0,1 sliding, 2,4 ratio 4 (37/4 = 9 rows each), 3,5 ratio 128 (0 rows).
  const uint32_t comp[] = {0, 0, 9, 0, 9, 0}, index[] = {0, 0, 9, 0, 9, 0};
  for (size_t il = 0; il < 6; ++il) {
    EXPECT_EQ(get_u32(b, x.logits + 4 * il), comp[il]) << il;
    EXPECT_EQ(get_u32(b, x.comp_counts + 4 * il), index[il]) << il;
  }
  // Layer 0's oldest raw row comes first; the last float is layer 5's last score.
  EXPECT_EQ(get_u32(b, x.index_counts), std::bit_cast<uint32_t>(snap.layers[0].raw.front()));
  EXPECT_EQ(get_u32(b, b.size() - 4), std::bit_cast<uint32_t>(snap.layers[5].comp_score.back()));
}

TEST(Snapshot, LoadsIntoALargerContextWithTheSameWindow) {
  const Snapshot snap = make_snapshot(model::kTiny, 37, 64);
  const std::vector<uint8_t> b = encode_snapshot(model::kTiny, snap);
  auto r = decode_snapshot(b, model::kTiny, {128, kChunk});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_equal(*r, snap);  // n_ctx stays the saved 64
  EXPECT_TRUE(encode_snapshot(model::kTiny, *r) == b);

  // Small's window is min(128, ctx): 256 -> 512 keeps it, 64 -> 128 does not.
  const Snapshot small = make_snapshot(model::kSmall, 20, 256, 64);
  EXPECT_TRUE(decode_snapshot(encode_snapshot(model::kSmall, small), model::kSmall, {512, 64}));
  const Snapshot narrow = make_snapshot(model::kSmall, 20, 64, 64);
  const Status st = decode_status(encode_snapshot(model::kSmall, narrow), model::kSmall, {128, 64});
  EXPECT_NE(st.message().find("raw window"), std::string::npos) << st.to_string();
}

// ---- hostile payloads ----

TEST(Snapshot, EveryTruncationIsAnError) {
  // T = 5, ctx 64: about 1.8 MB (the two ratio-128 frontiers are 1 MB of it). Every prefix length
  // below 4096, every length within 4 bytes of each section and per-layer block boundary, and
  // every 997th length in between -- all prefixes would take ~1 min; this stays well under 1 s.
  const Shape& s = model::kTiny;
  const std::vector<uint8_t> b = encode_snapshot(s, make_snapshot(s, 5, 64));
  const Sections x = sections_of(s, 5, 64);
  ASSERT_EQ(b.size(), x.end);
  std::vector<size_t> lengths;
  for (size_t n = 0; n < 4096; ++n) lengths.push_back(n);
  for (size_t n = 4096; n < b.size(); n += 997) lengths.push_back(n);
  std::vector<size_t> edges = {x.header, x.tokens, x.logits, x.comp_counts, x.index_counts};
  edges.insert(edges.end(), x.layer_parts.begin(), x.layer_parts.end());
  for (size_t e : edges) {
    for (size_t n = e - std::min<size_t>(e, 4); n <= e + 4; ++n) lengths.push_back(n);
  }
  for (size_t n : lengths) {
    if (n >= b.size()) continue;
    const Status st = decode_status(std::span(b).first(n), s, {64, kChunk});
    ASSERT_FALSE(st.is_ok()) << "prefix of " << n << " bytes decoded";
    const char* where = n < x.header         ? "the header"
                        : n < x.tokens       ? "the token ids"
                        : n < x.logits       ? "the logits"
                        : n < x.comp_counts  ? "the compressed row counts"
                        : n < x.index_counts ? "the indexer row counts"
                                             : "the layer state";
    ASSERT_NE(st.message().find(std::string("truncated in ") + where), std::string::npos)
        << n << ": " << st.to_string();
    ASSERT_EQ(st.code(), StatusCode::kInvalidFile) << n;
  }
}

TEST(Snapshot, TrailingBytesAreAnError) {
  std::vector<uint8_t> b = encode_snapshot(model::kTiny, make_snapshot(model::kTiny, 5, 64));
  b.push_back(0);
  const Status st = decode_status(b, model::kTiny, {64, kChunk});
  EXPECT_NE(st.message().find("1 trailing bytes"), std::string::npos) << st.to_string();
}

struct Corruption {
  const char* name;
  size_t field;  // header field index
  uint32_t value;
  LoadTarget target;
  const char* expect;  // substring of the error message
};

TEST(Snapshot, EveryCorruptHeaderFieldIsRejectedWithAReason) {
  const std::vector<uint8_t> good =
      encode_snapshot(model::kTiny, make_snapshot(model::kTiny, 37, 64));
  const LoadTarget t64{64, kChunk};
  ASSERT_TRUE(decode_snapshot(good, model::kTiny, t64).is_ok());
  const Corruption cases[] = {
      {"magic", 0, 0x34565345, t64, "bad magic"},
      {"magic byte order", 0, 0x44535634, t64, "bad magic"},
      {"version 1", 1, 1, t64, "version 1,"},
      {"version 3", 1, 3, t64, "version 3,"},
      {"saved ctx > target ctx", 2, 65, t64, "context 65 does not fit"},
      {"saved ctx 0", 2, 0, t64, "context 0 does not fit"},
      {"prefill chunk", 3, 64, t64, "prefill chunk 64 differs"},
      {"raw ring capacity", 4, 15, t64, "raw window 15/16"},
      {"raw window", 5, 17, t64, "raw window 16/17"},
      {"compressed capacity", 6, 17, t64, "compressed capacity 17"},
      {"compressed capacity of target", 6, 34, {128, kChunk}, "compressed capacity 34"},
      {"T == 0", 7, 0, t64, "token count 0"},
      {"T == target ctx", 7, 64, t64, "token count 64"},
      {"T == saved ctx < target ctx", 7, 64, {128, kChunk}, "token count 64"},
      {"T huge", 7, 0xffffffff, t64, "token count 4294967295"},
      {"n_layer", 8, 7, t64, "another model (7 layers"},
      {"head dim", 9, 256, t64, "head 256"},
      {"indexer head dim", 10, 64, t64, "indexer head 64"},
      {"vocab", 11, 129279, t64, "vocab 129279"},
      {"live rows", 12, 15, t64, "live raw rows 15, expected 16"},
      {"live rows = T", 12, 37, t64, "live raw rows 37, expected 16"},
  };
  for (const Corruption& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<uint8_t> b = good;
    put_u32(b, 4 * c.field, c.value);
    const Status st = decode_status(b, model::kTiny, c.target);
    ASSERT_FALSE(st.is_ok());
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << st.to_string();
  }
}

TEST(Snapshot, EverySingleBitFlipInTheHeaderIsRejected) {
  // With T = 5 and target ctx = saved ctx = 64, no header field has a neighbour value that is
  // still consistent, so each of the 416 header bits matters.
  const std::vector<uint8_t> good =
      encode_snapshot(model::kTiny, make_snapshot(model::kTiny, 5, 64));
  for (size_t bit = 0; bit < 52 * 8; ++bit) {
    std::vector<uint8_t> b = good;
    b[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    EXPECT_FALSE(decode_snapshot(b, model::kTiny, {64, kChunk}).is_ok()) << "bit " << bit;
  }
}

TEST(Snapshot, ARowCountOffByOneIsRejected) {
  const Shape& s = model::kTiny;
  const std::vector<uint8_t> good = encode_snapshot(s, make_snapshot(s, 37, 64));
  const Sections x = sections_of(s, 37, 64);
  struct RowCase {
    size_t at;
    uint32_t value;
    const char* expect;
  };
  const RowCase cases[] = {
      {x.logits + 4 * 2, 10, "layer 2: 10 compressed / 9 indexer rows, expected 9 / 9"},
      {x.logits + 4 * 2, 8, "layer 2: 8 compressed"},
      {x.logits + 4 * 0, 1, "layer 0: 1 compressed / 0 indexer rows, expected 0 / 0"},
      {x.logits + 4 * 3, 1, "layer 3: 1 compressed"},
      {x.comp_counts + 4 * 4, 10, "layer 4: 9 compressed / 10 indexer rows"},
      {x.comp_counts + 4 * 4, 8, "layer 4: 9 compressed / 8 indexer rows"},
      {x.comp_counts + 4 * 5, 1, "layer 5: 0 compressed / 1 indexer rows"},
      {x.comp_counts + 4 * 1, 0xffffffff, "layer 1: 0 compressed / 4294967295 indexer rows"},
  };
  for (const RowCase& c : cases) {
    SCOPED_TRACE(c.expect);
    std::vector<uint8_t> b = good;
    put_u32(b, c.at, c.value);
    const Status st = decode_status(b, s, {64, kChunk});
    ASSERT_FALSE(st.is_ok());
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << st.to_string();
  }
}

TEST(Snapshot, TokenIdsMustBeInTheVocabulary) {
  const Shape& s = model::kTiny;
  const std::vector<uint8_t> good = encode_snapshot(s, make_snapshot(s, 5, 64));
  for (uint32_t id : {static_cast<uint32_t>(s.n_vocab), 0xffffffffu}) {
    std::vector<uint8_t> b = good;
    put_u32(b, 52 + 4 * 4, id);  // the last token
    const Status st = decode_status(b, s, {64, kChunk});
    EXPECT_NE(st.message().find("token id " + std::to_string(id) + " is outside"),
              std::string::npos)
        << st.to_string();
  }
  std::vector<uint8_t> b = good;
  put_u32(b, 52 + 4 * 4, static_cast<uint32_t>(s.n_vocab - 1));
  auto r = decode_snapshot(b, s, {64, kChunk});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->tokens.back(), s.n_vocab - 1);
}

TEST(Snapshot, ASessionOfAnotherShapeOrSettingIsRejected) {
  // A smaller target context than the saved one, a saved window narrower than the target's, and a
  // payload of another model.
  const std::vector<uint8_t> tiny =
      encode_snapshot(model::kTiny, make_snapshot(model::kTiny, 5, 64));
  Status st = decode_status(tiny, model::kTiny, {32, kChunk});
  EXPECT_NE(st.message().find("context 64 does not fit this session's context 32"),
            std::string::npos)
      << st.to_string();
  const std::vector<uint8_t> ctx8 =
      encode_snapshot(model::kTiny, make_snapshot(model::kTiny, 5, 8));
  ASSERT_TRUE(decode_snapshot(ctx8, model::kTiny, {8, kChunk}).is_ok());
  st = decode_status(ctx8, model::kTiny, {64, kChunk});
  EXPECT_NE(st.message().find("raw window 8/8 does not match this session's 16"), std::string::npos)
      << st.to_string();
  st = decode_status(tiny, model::kSmall, {64, kChunk});
  EXPECT_NE(st.message().find("another model (6 layers"), std::string::npos) << st.to_string();
  st = decode_status({}, model::kTiny, {64, kChunk});
  EXPECT_NE(st.message().find("truncated in the header at byte 0"), std::string::npos)
      << st.to_string();
}

TEST(Snapshot, AHugeClaimedTokenCountFailsWithoutReadingPastTheEnd) {
  // Header only, T just under a 1M-token target context: must fail on length, not allocate 4 MB
  // of token ids first (the ASan build would flag an overrun).
  const uint32_t ctx = 1u << 20;
  std::vector<uint8_t> b(52);
  const uint32_t w = window_of(model::kTiny, ctx);
  const uint32_t h[] = {kSnapshotMagic, 2, ctx, kChunk, w,      w, ctx / 4 + 2,
                        ctx - 1,        6, 512, 128,    129280, w};
  for (size_t i = 0; i < 13; ++i) put_u32(b, 4 * i, h[i]);
  const Status st = decode_status(b, model::kTiny, {ctx, kChunk});
  EXPECT_NE(st.message().find("truncated in the token ids at byte 52"), std::string::npos)
      << st.to_string();
}

}  // namespace
}  // namespace ds4::kv
