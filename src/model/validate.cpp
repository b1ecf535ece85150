// src/model/validate.cpp: tensor-directory validation (see validate.h).
#include "model/validate.h"

#include <unordered_set>

#include "model/hparams.h"
#include "model/inventory.h"

namespace ds4::model {
namespace {

std::string dims_string(const std::vector<uint64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

}  // namespace

FileCheck check_model_file(const gguf::Reader& file) {
  FileCheck out;
  auto shape = shape_from_metadata(file);
  if (!shape) {
    out.problems.push_back(shape.status().message());
    return out;
  }
  out.shape_known = true;
  out.shape = *shape;
  out.mtp = file.find_tensor("mtp.0.e_proj.weight") != nullptr;
  // An MTP file carries no validated metadata in the published layout (model.md §2.4).
  if (!out.mtp) {
    MetadataCheck m = check_metadata(file, out.shape);
    out.problems = std::move(m.problems);
    out.notes = std::move(m.notes);
    if (auto mark = read_slice_mark(file, out.shape); !mark.is_ok()) {
      out.problems.push_back(mark.status().message());
    } else {
      out.slice = std::move(mark).value();
    }
  }
  // A slice file holds only what its layers bind; the rest of the model is elsewhere.
  const LayerRange held = out.slice ? out.slice->range : full_range(out.shape);

  const std::vector<TensorSpec> specs =
      out.mtp ? mtp_tensors(out.shape, Recipe::kQ2) : model_tensors(out.shape, Recipe::kQ2);
  std::unordered_set<std::string> expected;
  for (const TensorSpec& spec : specs) {
    expected.insert(spec.name);
    const gguf::TensorInfo* t = file.find_tensor(spec.name);
    if (t == nullptr) {
      if (spec.presence == Presence::kRequired && (out.mtp || range_binds(held, spec)))
        out.problems.push_back("missing tensor '" + spec.name + "'");
      continue;
    }
    // Present tensors are checked even when ignored: ds4 checks every tensor it looks up.
    if (!type_accepted(spec, t->type)) {
      out.problems.push_back("tensor '" + spec.name + "' has type " +
                             std::string(gguf::to_string(t->type)) + ", expected " +
                             std::string(gguf::to_string(spec.type)));
    }
    if (t->dims != spec.dims) {
      out.problems.push_back("tensor '" + spec.name + "' has shape " + dims_string(t->dims) +
                             ", expected " + dims_string(spec.dims));
    }
    if (spec.presence == Presence::kIgnored) {
      out.notes.push_back("ignored optional tensor '" + spec.name +
                          "' (a hash-routed layer: its table picks the experts)");
    }
  }
  // Routed gate and up must share a type (one fused kernel reads both).
  for (int il = 0; il < (out.mtp ? 1 : out.shape.n_layer); ++il) {
    const std::string p = out.mtp ? "mtp.0." : "blk." + std::to_string(il) + ".";
    const gguf::TensorInfo* g = file.find_tensor(p + "ffn_gate_exps.weight");
    const gguf::TensorInfo* u = file.find_tensor(p + "ffn_up_exps.weight");
    if (g && u && g->type != u->type)
      out.problems.push_back(p + "ffn_gate_exps and ffn_up_exps differ in type");
  }
  // ds4 binds tensors by name and never looks at others; so does the engine.
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (expected.count(t.name) == 0)
      out.notes.push_back("ignored tensor '" + t.name + "' (not part of the model)");
  }
  return out;
}

}  // namespace ds4::model
