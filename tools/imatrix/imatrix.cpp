// tools/imatrix/imatrix.cpp: importance matrices (see imatrix.h).
#include "tools/imatrix/imatrix.h"

#include <cmath>
#include <cstring>

#include "gguf/reader.h"
#include "gguf/writer.h"

namespace ds4::imatrix {
namespace {

constexpr const char* kVersionKey = "dwarfstar.imatrix.version";
constexpr uint32_t kVersion = 1;

size_t in_at(const Dims& d, int layer, int expert) {
  return (static_cast<size_t>(layer) * d.n_expert + expert) * static_cast<size_t>(d.n_embd);
}
size_t down_at(const Dims& d, int layer, int expert) {
  return (static_cast<size_t>(layer) * d.n_expert + expert) * static_cast<size_t>(d.n_ff);
}
size_t rows_at(const Dims& d, int layer, int expert) {
  return static_cast<size_t>(layer) * d.n_expert + expert;
}

std::string name(int layer, bool down, const char* what) {
  return "blk." + std::to_string(layer) + (down ? ".ffn_down_exps." : ".ffn_gate_up_exps.") + what;
}

std::span<const uint8_t> bytes_of(std::span<const double> v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(double)};
}

}  // namespace

Imatrix Imatrix::empty(const Dims& d) {
  Imatrix m;
  m.dims = d;
  const size_t experts = static_cast<size_t>(d.n_layer) * d.n_expert;
  m.in_sum_sq.assign(experts * static_cast<size_t>(d.n_embd), 0.0);
  m.down_sum_sq.assign(experts * static_cast<size_t>(d.n_ff), 0.0);
  m.in_rows.assign(experts, 0.0);
  m.down_rows.assign(experts, 0.0);
  return m;
}

std::optional<std::vector<float>> Imatrix::importance(int layer, int expert, bool down) const {
  const double rows = (down ? down_rows : in_rows)[rows_at(dims, layer, expert)];
  if (rows <= 0) return std::nullopt;
  const int64_t cols = down ? dims.n_ff : dims.n_embd;
  const double* sums = (down ? down_sum_sq.data() + down_at(dims, layer, expert)
                             : in_sum_sq.data() + in_at(dims, layer, expert));
  std::vector<float> out(static_cast<size_t>(cols));
  for (int64_t c = 0; c < cols; ++c)
    out[static_cast<size_t>(c)] = static_cast<float>(sums[c] / rows);
  return out;
}

void Collector::on_expert_inputs(const ExpertInputs& x) {
  Imatrix& m = *m_;
  const Dims& d = m.dims;
  if (x.layer < 0 || x.layer >= d.n_layer || x.n_embd != d.n_embd || x.n_ff != d.n_ff) return;
  for (int64_t r = 0; r < x.rows; ++r) {
    const float* in = x.in.data() + r * x.n_embd;
    for (int j = 0; j < x.k; ++j) {
      const int64_t slot = r * x.k + j;
      const int e = x.experts[static_cast<size_t>(slot)];
      if (e < 0 || e >= d.n_expert) continue;
      double* s = m.in_sum_sq.data() + in_at(d, x.layer, e);
      for (int64_t c = 0; c < x.n_embd; ++c) s[c] += static_cast<double>(in[c]) * in[c];
      m.in_rows[rows_at(d, x.layer, e)] += 1;
      const float* dn = x.down_in.data() + slot * x.n_ff;
      double* t = m.down_sum_sq.data() + down_at(d, x.layer, e);
      for (int64_t c = 0; c < x.n_ff; ++c) t[c] += static_cast<double>(dn[c]) * dn[c];
      m.down_rows[rows_at(d, x.layer, e)] += 1;
    }
  }
}

Status merge(Imatrix& a, const Imatrix& b) {
  if (!(a.dims == b.dims)) {
    return Status::invalid_argument("the importance matrices are of different models' dimensions");
  }
  if (a.fingerprint != b.fingerprint) {
    return Status::invalid_argument("the importance matrices are of different model files (%s, %s)",
                                    a.fingerprint.c_str(), b.fingerprint.c_str());
  }
  for (size_t i = 0; i < a.in_sum_sq.size(); ++i) a.in_sum_sq[i] += b.in_sum_sq[i];
  for (size_t i = 0; i < a.down_sum_sq.size(); ++i) a.down_sum_sq[i] += b.down_sum_sq[i];
  for (size_t i = 0; i < a.in_rows.size(); ++i) a.in_rows[i] += b.in_rows[i];
  for (size_t i = 0; i < a.down_rows.size(); ++i) a.down_rows[i] += b.down_rows[i];
  a.chunks += b.chunks;
  if (a.dataset != b.dataset) a.dataset = "merged";
  return Status::ok();
}

Status write_imatrix(const Imatrix& m, const std::string& path) {
  const Dims& d = m.dims;
  DS4_ASSIGN_OR_RETURN(gguf::Writer w, gguf::Writer::create(path));
  DS4_TRY(w.add_metadata("general.type", gguf::Value::string("imatrix")));
  DS4_TRY(w.add_metadata(kVersionKey, gguf::Value::u32(kVersion)));
  DS4_TRY(w.add_metadata("dwarfstar.imatrix.fingerprint", gguf::Value::string(m.fingerprint)));
  DS4_TRY(w.add_metadata("dwarfstar.imatrix.dataset", gguf::Value::string(m.dataset)));
  DS4_TRY(w.add_metadata("dwarfstar.imatrix.chunk_tokens", gguf::Value::u32(m.chunk_tokens)));
  DS4_TRY(w.add_metadata("dwarfstar.imatrix.chunks", gguf::Value::u64(m.chunks)));
  DS4_TRY(w.add_metadata("dwarfstar.imatrix.n_layer", gguf::Value::u32(d.n_layer)));
  DS4_TRY(w.add_metadata("dwarfstar.imatrix.n_expert", gguf::Value::u32(d.n_expert)));
  DS4_TRY(w.add_metadata("dwarfstar.imatrix.n_embd", gguf::Value::u64(d.n_embd)));
  DS4_TRY(w.add_metadata("dwarfstar.imatrix.n_ff", gguf::Value::u64(d.n_ff)));
  const uint64_t ne = static_cast<uint64_t>(d.n_expert);
  for (int l = 0; l < d.n_layer; ++l) {
    DS4_TRY(w.add_tensor(name(l, false, "sum_sq"), gguf::GgufType::kF64,
                         {static_cast<uint64_t>(d.n_embd), ne})
                .status());
    DS4_TRY(w.add_tensor(name(l, false, "rows"), gguf::GgufType::kF64, {ne}).status());
    DS4_TRY(w.add_tensor(name(l, true, "sum_sq"), gguf::GgufType::kF64,
                         {static_cast<uint64_t>(d.n_ff), ne})
                .status());
    DS4_TRY(w.add_tensor(name(l, true, "rows"), gguf::GgufType::kF64, {ne}).status());
  }
  DS4_TRY(w.write_header());
  for (int l = 0; l < d.n_layer; ++l) {
    const size_t i = static_cast<size_t>(l) * 4;
    DS4_TRY(w.write_tensor_data(
        i, bytes_of(std::span(m.in_sum_sq).subspan(in_at(d, l, 0), d.n_expert * d.n_embd))));
    DS4_TRY(
        w.write_tensor_data(i + 1, bytes_of(std::span(m.in_rows).subspan(rows_at(d, l, 0), ne))));
    DS4_TRY(w.write_tensor_data(
        i + 2, bytes_of(std::span(m.down_sum_sq).subspan(down_at(d, l, 0), d.n_expert * d.n_ff))));
    DS4_TRY(
        w.write_tensor_data(i + 3, bytes_of(std::span(m.down_rows).subspan(rows_at(d, l, 0), ne))));
  }
  return w.finish();
}

Result<Imatrix> read_imatrix(const std::string& path) {
  DS4_ASSIGN_OR_RETURN(const gguf::Reader f, gguf::Reader::open(path));
  const auto bad = [&path](const std::string& what) {
    return Status::invalid_file("'%s' is not an importance matrix: %s", path.c_str(), what.c_str());
  };
  const auto version = f.get_u32(kVersionKey);
  if (!version.is_ok()) return bad("no " + std::string(kVersionKey));
  if (*version != kVersion) return bad("version " + std::to_string(*version));
  Dims d;
  DS4_ASSIGN_OR_RETURN(const uint32_t n_layer, f.get_u32("dwarfstar.imatrix.n_layer"));
  DS4_ASSIGN_OR_RETURN(const uint32_t n_expert, f.get_u32("dwarfstar.imatrix.n_expert"));
  DS4_ASSIGN_OR_RETURN(const uint64_t n_embd, f.get_u64_like("dwarfstar.imatrix.n_embd"));
  DS4_ASSIGN_OR_RETURN(const uint64_t n_ff, f.get_u64_like("dwarfstar.imatrix.n_ff"));
  if (n_layer == 0 || n_layer > 1024 || n_expert == 0 || n_expert > 4096 || n_embd == 0 ||
      n_embd > (1 << 20) || n_ff == 0 || n_ff > (1 << 20))
    return bad("dimensions out of range");
  d.n_layer = static_cast<int>(n_layer);
  d.n_expert = static_cast<int>(n_expert);
  d.n_embd = static_cast<int64_t>(n_embd);
  d.n_ff = static_cast<int64_t>(n_ff);
  Imatrix m = Imatrix::empty(d);
  DS4_ASSIGN_OR_RETURN(const std::string_view fp, f.get_string("dwarfstar.imatrix.fingerprint"));
  DS4_ASSIGN_OR_RETURN(const std::string_view ds, f.get_string("dwarfstar.imatrix.dataset"));
  DS4_ASSIGN_OR_RETURN(const uint32_t chunk_tokens, f.get_u32("dwarfstar.imatrix.chunk_tokens"));
  DS4_ASSIGN_OR_RETURN(const uint64_t chunks, f.get_u64_like("dwarfstar.imatrix.chunks"));
  m.fingerprint = std::string(fp);
  m.dataset = std::string(ds);
  m.chunk_tokens = static_cast<int>(chunk_tokens);
  m.chunks = chunks;
  const auto load = [&](const std::string& tname, std::vector<double>& into, size_t at,
                        size_t n) -> Status {
    const gguf::TensorInfo* t = f.find_tensor(tname);
    if (t == nullptr) return bad("no tensor " + tname);
    if (t->type != gguf::GgufType::kF64 || t->n_bytes != n * sizeof(double))
      return bad(tname + " is not " + std::to_string(n) + " f64 values");
    std::memcpy(into.data() + at, f.tensor_data(*t).data(), t->n_bytes);
    for (size_t i = at; i < at + n; ++i) {
      if (!std::isfinite(into[i]) || into[i] < 0)
        return bad(tname + " holds a negative or non-finite value");
    }
    return Status::ok();
  };
  for (int l = 0; l < d.n_layer; ++l) {
    DS4_TRY(load(name(l, false, "sum_sq"), m.in_sum_sq, in_at(d, l, 0), d.n_expert * d.n_embd));
    DS4_TRY(load(name(l, false, "rows"), m.in_rows, rows_at(d, l, 0), d.n_expert));
    DS4_TRY(load(name(l, true, "sum_sq"), m.down_sum_sq, down_at(d, l, 0), d.n_expert * d.n_ff));
    DS4_TRY(load(name(l, true, "rows"), m.down_rows, rows_at(d, l, 0), d.n_expert));
  }
  return m;
}

Result<Imatrix> read_imatrix(const std::string& path, const model::Shape& shape) {
  DS4_ASSIGN_OR_RETURN(Imatrix m, read_imatrix(path));
  if (!(m.dims == dims_of(shape))) {
    return Status::invalid_argument(
        "the importance matrix '%s' is of another shape than the model (%.*s)", path.c_str(),
        static_cast<int>(shape.name.size()), shape.name.data());
  }
  return m;
}

}  // namespace ds4::imatrix
