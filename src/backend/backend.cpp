// src/backend/backend.cpp: the validated front of every op and layout sizes.
#include "backend/backend.h"

#include <cstring>
#include <string>

#include "base/check.h"

namespace ds4::backend {

Act Buffer::view(int64_t rows, int64_t cols) {
  DS4_CHECK(rows >= 0 && cols >= 0 && rows * cols <= size());
  return Act{data(), rows, cols};
}

uint64_t SequenceLayout::bytes() const {
  uint64_t floats = 0;
  for (const LayerLayout& l : layers) {
    floats += static_cast<uint64_t>(l.raw_cap) * head_dim;
    if (l.ratio != 0) {
      floats += static_cast<uint64_t>(l.comp_cap) * head_dim;
      floats += 2ull * l.frontier_rows * l.frontier_width;
    }
    if (l.ratio == 4) {
      floats += static_cast<uint64_t>(l.comp_cap) * indexer_head_dim;
      floats += 2ull * 8 * 2 * indexer_head_dim;
    }
  }
  return floats * sizeof(float);
}

namespace {

// check_state_fits for either form of a layer's state (both give each part's float count).
template <typename State>
Status check_fits(const SequenceLayout& layout, std::span<const State> state) {
  if (state.size() != layout.layers.size()) {
    return Status::invalid_argument("state has %zu layers, the sequence %zu", state.size(),
                                    layout.layers.size());
  }
  const int64_t hd = layout.head_dim, ihd = layout.indexer_head_dim;
  for (size_t il = 0; il < state.size(); ++il) {
    const State& st = state[il];
    const LayerLayout& l = layout.layers[il];
    const int64_t n_raw = static_cast<int64_t>(st.raw.size()) / hd;
    const int64_t frontier = int64_t{l.frontier_rows} * l.frontier_width;
    bool ok = n_raw * hd == static_cast<int64_t>(st.raw.size()) && n_raw <= l.raw_cap;
    if (l.ratio != 0) {
      ok = ok && static_cast<int64_t>(st.comp.size()) % hd == 0 &&
           static_cast<int64_t>(st.comp.size()) / hd <= l.comp_cap &&
           static_cast<int64_t>(st.comp_kv.size()) == frontier &&
           static_cast<int64_t>(st.comp_score.size()) == frontier;
    } else {
      ok = ok && st.comp.empty() && st.comp_kv.empty() && st.comp_score.empty();
    }
    if (l.ratio == 4) {
      ok = ok && static_cast<int64_t>(st.index.size()) % ihd == 0 &&
           static_cast<int64_t>(st.index.size()) / ihd <= l.comp_cap &&
           st.index_kv.size() == 8 * 256 && st.index_score.size() == 8 * 256;
    } else {
      ok = ok && st.index.empty() && st.index_kv.empty() && st.index_score.empty();
    }
    if (!ok) return Status::invalid_argument("layer %zu: state sizes do not fit the layout", il);
  }
  return Status::ok();
}

std::vector<float> floats_of(const FloatBytes& b) {
  std::vector<float> out(b.count);
  if (b.count != 0) std::memcpy(out.data(), b.data, b.count * sizeof(float));
  return out;
}

}  // namespace

Status check_state_fits(const SequenceLayout& layout, const std::vector<LayerState>& state) {
  return check_fits(layout, std::span<const LayerState>(state));
}

Status check_state_fits(const SequenceLayout& layout, std::span<const LayerStateView> state) {
  return check_fits(layout, state);
}

LayerState to_state(const LayerStateView& v) {
  return {.n_tokens = v.n_tokens,
          .raw = floats_of(v.raw),
          .comp = floats_of(v.comp),
          .comp_kv = floats_of(v.comp_kv),
          .comp_score = floats_of(v.comp_score),
          .index = floats_of(v.index),
          .index_kv = floats_of(v.index_kv),
          .index_score = floats_of(v.index_score)};
}

LayerStateView view_of(const LayerState& l) {
  auto of = [](const std::vector<float>& v) {
    return FloatBytes{.data = reinterpret_cast<const uint8_t*>(v.data()), .count = v.size()};
  };
  return {.n_tokens = l.n_tokens,
          .raw = of(l.raw),
          .comp = of(l.comp),
          .comp_kv = of(l.comp_kv),
          .comp_score = of(l.comp_score),
          .index = of(l.index),
          .index_kv = of(l.index_kv),
          .index_score = of(l.index_score)};
}

PartCounts part_counts(const LayerLayout& l, int head_dim, int indexer_head_dim, int n_raw,
                       int n_comp, int n_index) {
  const auto hd = static_cast<size_t>(head_dim), ihd = static_cast<size_t>(indexer_head_dim);
  const size_t frontier = static_cast<size_t>(l.frontier_rows) * l.frontier_width;
  const bool comp = l.ratio != 0, index = l.ratio == 4;
  return {static_cast<size_t>(n_raw) * hd,
          comp ? static_cast<size_t>(n_comp) * hd : 0,
          comp ? frontier : 0,
          comp ? frontier : 0,
          index ? static_cast<size_t>(n_index) * ihd : 0,
          index ? size_t{8 * 256} : 0,
          index ? size_t{8 * 256} : 0};
}

LayerStateView take_layer_view(const uint8_t** p, int32_t n_tokens, const PartCounts& counts) {
  std::array<FloatBytes, 7> parts;
  for (size_t i = 0; i < parts.size(); ++i) {
    parts[i] = FloatBytes{.data = *p, .count = counts[i]};
    *p += counts[i] * sizeof(float);
  }
  return {.n_tokens = n_tokens,
          .raw = parts[0],
          .comp = parts[1],
          .comp_kv = parts[2],
          .comp_score = parts[3],
          .index = parts[4],
          .index_kv = parts[5],
          .index_score = parts[6]};
}

std::vector<LayerStateView> views_of(const std::vector<LayerState>& state) {
  std::vector<LayerStateView> views;
  views.reserve(state.size());
  for (const LayerState& l : state) views.push_back(view_of(l));
  return views;
}

namespace {

void append_floats(std::vector<uint8_t>* out, const float* p, size_t n) {
  const auto* b = reinterpret_cast<const uint8_t*>(p);
  out->insert(out->end(), b, b + n * sizeof(float));
}

// `layers` copied over `out` when the sizes agree (export_sequence_into's contract).
Status copy_layers_into(std::span<const uint8_t> layers, std::span<uint8_t> out) {
  if (layers.size() != out.size()) return layers_size_mismatch(out.size(), layers.size());
  if (!layers.empty()) std::memcpy(out.data(), layers.data(), layers.size());
  return Status::ok();
}

}  // namespace

Status layers_size_mismatch(size_t room, size_t holds) {
  return Status::invalid_argument(
      "the payload has room for %zu bytes of layer state, the sequence holds %zu", room, holds);
}

void append_layer_state(std::vector<uint8_t>* out, const LayerState& l) {
  for (const std::vector<float>* part :
       {&l.raw, &l.comp, &l.comp_kv, &l.comp_score, &l.index, &l.index_kv, &l.index_score}) {
    append_floats(out, part->data(), part->size());
  }
}

Status Backend::export_sequence_into(int seq, std::span<uint8_t> out,
                                     const std::function<void(size_t)>& done) const {
  DS4_ASSIGN_OR_RETURN(std::vector<LayerState> layers, export_sequence(seq));
  std::vector<uint8_t> bytes;
  for (const LayerState& l : layers) append_layer_state(&bytes, l);
  DS4_TRY(copy_layers_into(bytes, out));
  if (done) done(out.size());
  return Status::ok();
}

void Backend::pick_tokens(std::span<const PickRow> /*rows*/, std::span<Picked> /*out*/) {
  DS4_CHECK_MSG(false, "the %s backend picks no tokens (picks_tokens() is false)",
                std::string(name()).c_str());
}

Status Backend::import_sequence_view(int seq, std::span<const LayerStateView> state) {
  std::vector<LayerState> layers;
  layers.reserve(state.size());
  for (const LayerStateView& v : state) layers.push_back(to_state(v));
  return import_sequence(seq, layers);
}

namespace {

int64_t weight_rows(const Weight& w) { return w.ne[1] * w.ne[2]; }

void check_rows(Act a, int64_t rows, int64_t cols, const char* what) {
  DS4_CHECK_MSG(a.data != nullptr, "%s: no data", what);
  DS4_CHECK_MSG(a.rows == rows && a.cols == cols, "%s: [%lld][%lld], want [%lld][%lld]", what,
                static_cast<long long>(a.rows), static_cast<long long>(a.cols),
                static_cast<long long>(rows), static_cast<long long>(cols));
}

}  // namespace

void Backend::embed(const Weight& table, std::span<const RowTag> rows, Act out) {
  DS4_CHECK(table.present() && out.rows == static_cast<int64_t>(rows.size()));
  DS4_CHECK(out.cols % table.ne[0] == 0);
  for (const RowTag& r : rows)
    DS4_CHECK_MSG(r.token >= 0 && r.token < table.ne[1], "token %d", r.token);
  do_embed(table, rows, out);
}

void Backend::rms_norm(Act x, const Weight* weight, int64_t segment, Act y) {
  DS4_CHECK(segment > 0 && x.cols % segment == 0);
  check_rows(y, x.rows, x.cols, "rms_norm output");
  if (weight != nullptr) {
    DS4_CHECK(weight->type == gguf::GgufType::kF32 && weight->ne[0] == segment);
  }
  do_rms_norm(x, weight, segment, y);
}

void Backend::matmul(const Weight& w, Act x, Act y, int groups) {
  DS4_CHECK(w.present() && groups >= 1 && w.ne[2] == 1);
  check_rows(x, x.rows, w.ne[0] * groups, "matmul input");
  check_rows(y, x.rows, w.ne[1], "matmul output");
  DS4_CHECK(w.ne[1] % groups == 0);
  do_matmul(w, x, y, groups);
}

void Backend::matmuls(Act x, std::span<const Product> products) {
  for (const Product& p : products) {
    DS4_CHECK(p.w != nullptr && p.w->present() && p.w->ne[2] == 1 && p.y.data != x.data);
    check_rows(x, x.rows, p.w->ne[0], "matmul input");
    check_rows(p.y, x.rows, p.w->ne[1], "matmul output");
  }
  do_matmuls(x, products);
}

void Backend::do_matmuls(Act x, std::span<const Product> products) {
  for (const Product& p : products) do_matmul(*p.w, x, p.y, 1);
}

void Backend::hc_pre(const HcWeights& hc, Act x, Act cur, Act mix, const Weight* norm, Act normed) {
  const int64_t n_mix = hc.fn.ne[1];
  DS4_CHECK(hc.fn.ne[0] == x.cols && hc.base.ne[0] == n_mix && hc.scale.ne[0] == 3);
  const int64_t n_hc = x.cols / cur.cols;
  DS4_CHECK(n_hc * cur.cols == x.cols && n_mix == 2 * n_hc + n_hc * n_hc);
  check_rows(cur, x.rows, x.cols / n_hc, "hc_pre cur");
  check_rows(mix, x.rows, n_mix, "hc_pre mix");
  if (norm != nullptr) {
    DS4_CHECK(norm->type == gguf::GgufType::kF32 && norm->ne[0] == cur.cols);
    check_rows(normed, x.rows, cur.cols, "hc_pre normed");
  }
  sublayer_start();
  do_hc_pre(hc, x, cur, mix, norm, normed);
}

void Backend::hc_post(Act x, Act f, Act mix, Act y) {
  const int64_t n_hc = x.cols / f.cols;
  DS4_CHECK(n_hc * f.cols == x.cols && f.rows == x.rows);
  check_rows(mix, x.rows, 2 * n_hc + n_hc * n_hc, "hc_post mix");
  check_rows(y, x.rows, x.cols, "hc_post output");
  do_hc_post(x, f, mix, y);
}

void Backend::add(Act a, Act b, Act y) {
  check_rows(b, a.rows, a.cols, "add input");
  check_rows(y, a.rows, a.cols, "add output");
  do_add(a, b, y);
}

void Backend::copy(Act src, Act dst) {
  check_rows(dst, src.rows, src.cols, "copy output");
  const int64_t n = src.rows * src.cols;
  DS4_CHECK(dst.data + n <= src.data || src.data + n <= dst.data);
  do_copy(src, dst);
}

void Backend::attention(int il, const AttentionLayer& l, std::span<const RowTag> rows,
                        const AttentionInputs& in, Act out) {
  const auto n = static_cast<int64_t>(rows.size());
  DS4_CHECK(l.ratio == 0 || l.ratio == 4 || l.ratio == 128);
  DS4_CHECK(l.sinks.present() && l.sinks.ne[0] == l.n_head && l.window > 0);
  check_rows(in.q, n, int64_t{l.n_head} * 512, "attention q");
  check_rows(in.kv, n, 512, "attention kv");
  check_rows(out, n, int64_t{l.n_head} * 512, "attention output");
  if (l.ratio != 0) {
    const int64_t w = (l.ratio == 4 ? 2 : 1) * 512;
    check_rows(in.comp_kv, n, w, "compressor kv");
    check_rows(in.comp_gate, n, w, "compressor gate");
    DS4_CHECK(l.comp_ape.ne[0] == w && l.comp_ape.ne[1] == l.ratio && l.comp_norm.ne[0] == 512);
  }
  if (l.ratio == 4) {
    check_rows(in.index_kv, n, 256, "indexer kv");
    check_rows(in.index_gate, n, 256, "indexer gate");
    check_rows(in.index_q, n, int64_t{l.n_index_head} * 128, "indexer q");
    check_rows(in.index_w, n, l.n_index_head, "indexer weights");
    DS4_CHECK(l.index_ape.ne[0] == 256 && l.index_ape.ne[1] == 4 && l.index_norm.ne[0] == 128);
    DS4_CHECK(l.index_top_k > 0);
  }
  do_attention(il, l, rows, in, out);
}

void Backend::moe(const MoeLayer& l, std::span<const RowTag> rows, Act n, Act out) {
  DS4_CHECK(n.rows == static_cast<int64_t>(rows.size()));
  check_rows(out, n.rows, n.cols, "moe output");
  DS4_CHECK(l.router.ne[0] == n.cols && l.gate_exps.ne[0] == n.cols);
  DS4_CHECK(l.gate_exps.ne[2] == l.router.ne[1] && l.down_exps.ne[1] == n.cols);
  DS4_CHECK(l.n_expert_used > 0 && l.n_expert_used <= l.router.ne[1]);
  if (l.tid2eid.present()) {
    DS4_CHECK(l.tid2eid.type == gguf::GgufType::kI32 && l.tid2eid.ne[0] == l.n_expert_used);
    for (const RowTag& r : rows) DS4_CHECK(r.token >= 0 && r.token < l.tid2eid.ne[1]);
  }
  do_moe(l, rows, n, out);
}

void Backend::output_head(const OutputHead& h, Act x, std::span<const int> which, Act logits) {
  DS4_CHECK(logits.rows == static_cast<int64_t>(which.size()));
  DS4_CHECK(logits.cols == weight_rows(h.output));
  DS4_CHECK(h.hc.fn.ne[0] == x.cols && h.hc.scale.ne[0] == 1);
  for (int r : which) DS4_CHECK(r >= 0 && r < x.rows);
  do_output_head(h, x, which, logits);
}

void Backend::upload_act(const float* host, Act dst) {
  DS4_CHECK(host != nullptr && (dst.rows * dst.cols == 0 || dst.data != nullptr));
  do_upload_act(host, dst);
}

void Backend::steer(const Weight& direction, std::span<const RowTag> rows, Sublayer which, Act y) {
  DS4_CHECK(direction.present() && direction.type == gguf::GgufType::kF32);
  DS4_CHECK(direction.ne[0] == y.cols && direction.ne[1] == 1 && direction.ne[2] == 1);
  check_rows(y, static_cast<int64_t>(rows.size()), y.cols, "steer y");
  do_steer(direction, rows, which, y);
}

void Backend::report_sublayer(int layer, Sublayer which, std::span<const RowTag> rows, Act y) {
  check_rows(y, static_cast<int64_t>(rows.size()), y.cols, "report_sublayer y");
  do_report_sublayer(layer, which, rows, y);
}

void report_sublayer_to(Observer& observer, int layer, Sublayer which, std::span<const RowTag> rows,
                        std::span<const float> values, int64_t n_embd) {
  std::vector<int32_t> positions(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) positions[r] = rows[r].pos;
  observer.on_sublayer_outputs({.layer = layer,
                                .sublayer = which,
                                .rows = static_cast<int64_t>(rows.size()),
                                .n_embd = n_embd,
                                .values = values,
                                .positions = positions});
}

void Backend::download(Act src, float* host) {
  DS4_CHECK(host != nullptr && (src.rows * src.cols == 0 || src.data != nullptr));
  do_download(src, host);
}

}  // namespace ds4::backend
