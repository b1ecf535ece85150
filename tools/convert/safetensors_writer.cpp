// tools/convert/safetensors_writer.cpp: safetensors encoding and checkpoint directory layout.
#include "tools/convert/safetensors_writer.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace ds4::convert {
namespace {

using nlohmann::json;

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) return Status::io_error("cannot write '%s'", path.c_str());
  return Status::ok();
}

}  // namespace

Status write_safetensors(const std::string& path, const std::vector<TensorData>& tensors,
                         const std::vector<std::pair<std::string, std::string>>& metadata) {
  // ordered_json keeps the tensors in file order, which makes the headers easy to read.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    header["__metadata__"] = m;
  }
  uint64_t offset = 0;
  for (const TensorData& t : tensors) {
    uint64_t elems = 1;
    for (int64_t d : t.shape) {
      if (d < 0)
        return Status::invalid_argument("tensor '%s' has a negative dimension", t.name.c_str());
      elems *= static_cast<uint64_t>(d);
    }
    if (elems * dtype_bytes(t.dtype) != t.bytes.size())
      return Status::invalid_argument("tensor '%s': %zu bytes for %llu %s elements", t.name.c_str(),
                                      t.bytes.size(), static_cast<unsigned long long>(elems),
                                      std::string(to_string(t.dtype)).c_str());
    if (header.contains(t.name))
      return Status::invalid_argument("tensor '%s' given twice", t.name.c_str());
    header[t.name] = {{"dtype", std::string(to_string(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  uint8_t len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const TensorData& t : tensors) {
    out.write(reinterpret_cast<const char*>(t.bytes.data()),
              static_cast<std::streamsize>(t.bytes.size()));
  }
  out.close();
  if (!out) return Status::io_error("cannot write '%s'", path.c_str());
  return Status::ok();
}

Status write_checkpoint(const std::string& dir, const std::vector<TensorData>& tensors,
                        const std::string& config_json, uint64_t max_shard_bytes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::io_error("cannot create '%s': %s", dir.c_str(), ec.message().c_str());
  // Greedy split in the given order.
  std::vector<std::vector<const TensorData*>> shards(1);
  uint64_t in_shard = 0, total = 0;
  for (const TensorData& t : tensors) {
    if (!shards.back().empty() && in_shard + t.bytes.size() > max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(&t);
    in_shard += t.bytes.size();
    total += t.bytes.size();
  }
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  const size_t n = shards.size();
  for (size_t i = 0; i < n; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, n);
    std::vector<TensorData> part;
    part.reserve(shards[i].size());
    for (const TensorData* t : shards[i]) {
      part.push_back(*t);
      weight_map[t->name] = name;
    }
    DS4_TRY(write_safetensors((fs::path(dir) / name).string(), part, {{"format", "pt"}}));
  }
  nlohmann::ordered_json index = {{"metadata", {{"total_size", total}}},
                                  {"weight_map", weight_map}};
  DS4_TRY(
      write_text((fs::path(dir) / "model.safetensors.index.json").string(), index.dump(2) + "\n"));
  if (!config_json.empty())
    DS4_TRY(write_text((fs::path(dir) / "config.json").string(), config_json));
  return Status::ok();
}

}  // namespace ds4::convert
