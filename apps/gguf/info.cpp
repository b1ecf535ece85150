// apps/gguf/info.cpp: `ds4-gguf info FILE` -- header, metadata and tensor table of a GGUF file.
#include <cinttypes>
#include <cstdio>
#include <map>
#include <string>

#include "apps/gguf/commands.h"
#include "gguf/reader.h"

namespace ds4::apps::gguf_tool {
namespace {

std::string shape_string(const gguf::TensorInfo& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(t.dims[i]);
  }
  return s + "]";
}

std::string human_bytes(uint64_t n) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, kUnits[u]);
  return buf;
}

}  // namespace

int run_info(const InfoOptions& opts) {
  auto r = gguf::Reader::open(opts.path);
  if (!r) {
    std::fprintf(stderr, "ds4-gguf: %s\n", r.status().to_string().c_str());
    return 1;
  }
  std::printf("file: %s (%s, %" PRIu64 " bytes)\n", opts.path.c_str(),
              human_bytes(r->file_size()).c_str(), r->file_size());
  std::printf(
      "gguf version %u, alignment %u, %zu metadata keys, %zu tensors, data at offset %" PRIu64 "\n",
      r->version(), r->alignment(), r->metadata().size(), r->tensors().size(), r->data_offset());
  std::printf("\nmetadata:\n");
  for (const gguf::KeyValue& kv : r->metadata()) {
    std::string type(gguf::to_string(kv.value.type()));
    if (kv.value.type() == gguf::ValueType::kArray) {
      type += "<" + std::string(gguf::to_string(kv.value.elem_type())) + ">[" +
              std::to_string(kv.value.size()) + "]";
    }
    std::printf("  %-48s %-16s %s\n", kv.key.c_str(), type.c_str(),
                kv.value.to_display(static_cast<size_t>(opts.max_array_items)).c_str());
  }
  std::printf("\ntensors:\n  %5s  %-44s %-8s %-22s %14s %14s\n", "#", "name", "type", "shape",
              "bytes", "offset");
  uint64_t total = 0;
  std::map<std::string, uint64_t> by_type;
  for (size_t i = 0; i < r->tensors().size(); ++i) {
    const gguf::TensorInfo& t = r->tensors()[i];
    total += t.n_bytes;
    by_type[std::string(gguf::to_string(t.type))] += t.n_bytes;
    std::printf("  %5zu  %-44s %-8s %-22s %14" PRIu64 " %14" PRIu64 "\n", i, t.name.c_str(),
                std::string(gguf::to_string(t.type)).c_str(), shape_string(t).c_str(), t.n_bytes,
                t.offset);
  }
  std::printf("\ntensor bytes: %" PRIu64 " (%s)", total, human_bytes(total).c_str());
  for (const auto& [type, bytes] : by_type)
    std::printf("; %s %s", type.c_str(), human_bytes(bytes).c_str());
  std::printf("\n");
  return 0;
}

}  // namespace ds4::apps::gguf_tool
