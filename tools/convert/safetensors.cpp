// tools/convert/safetensors.cpp: safetensors header validation and checkpoint directory lookup.
#include "tools/convert/safetensors.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace ds4::convert {
namespace {

using nlohmann::json;

struct DtypeName {
  Dtype dtype;
  std::string_view name;
  uint32_t bytes;
};
// The first spelling of each dtype is the canonical one.
constexpr std::array<DtypeName, 18> kDtypes{{
    {Dtype::kF64, "F64", 8},
    {Dtype::kF32, "F32", 4},
    {Dtype::kF16, "F16", 2},
    {Dtype::kBF16, "BF16", 2},
    {Dtype::kI64, "I64", 8},
    {Dtype::kI32, "I32", 4},
    {Dtype::kI16, "I16", 2},
    {Dtype::kI8, "I8", 1},
    {Dtype::kU64, "U64", 8},
    {Dtype::kU32, "U32", 4},
    {Dtype::kU16, "U16", 2},
    {Dtype::kU8, "U8", 1},
    {Dtype::kBool, "BOOL", 1},
    {Dtype::kF8E4M3, "F8_E4M3", 1},
    {Dtype::kF8E4M3, "F8_E4M3FN", 1},
    {Dtype::kF8E5M2, "F8_E5M2", 1},
    {Dtype::kF8E8M0, "F8_E8M0", 1},
    {Dtype::kF8E8M0, "E8M0", 1},
}};

uint64_t read_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Reads a non-negative JSON integer; false for anything else (floats, negatives, strings).
bool as_u64(const json& j, uint64_t* out) {
  if (!j.is_number_unsigned()) {
    if (j.is_number_integer() && j.get<int64_t>() >= 0) {
      *out = static_cast<uint64_t>(j.get<int64_t>());
      return true;
    }
    return false;
  }
  *out = j.get<uint64_t>();
  return true;
}

// Parses JSON text, reporting a key repeated inside any object at `dup_depth` (1 = top level).
Result<json> parse_json(std::string_view text, const std::string& what, bool* duplicate,
                        std::string* dup_key) {
  *duplicate = false;
  std::vector<std::set<std::string>> seen;
  auto cb = [&](int depth, json::parse_event_t ev, json& parsed) -> bool {
    if (ev == json::parse_event_t::object_start) {
      seen.emplace_back();
    } else if (ev == json::parse_event_t::object_end) {
      if (!seen.empty()) seen.pop_back();
    } else if (ev == json::parse_event_t::key && !seen.empty()) {
      const std::string k = parsed.get<std::string>();
      if (!seen.back().insert(k).second && !*duplicate) {
        *duplicate = true;
        *dup_key = k;
      }
    }
    (void)depth;
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), cb);
  } catch (const json::exception& e) {
    return Status::invalid_file("%s: invalid JSON: %s", what.c_str(), e.what());
  }
}

Status parse_entry(const std::string& label, const std::string& name, const json& v,
                   uint64_t data_size, TensorView* out, uint64_t* begin) {
  const char* n = name.c_str();
  if (!v.is_object())
    return Status::invalid_file("%s: tensor '%s' entry is not an object", label.c_str(), n);
  for (const auto& [key, unused] : v.items()) {
    (void)unused;
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      return Status::invalid_file("%s: tensor '%s' has unknown field '%s'", label.c_str(), n,
                                  key.c_str());
  }
  if (!v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
    return Status::invalid_file("%s: tensor '%s' lacks dtype, shape or data_offsets", label.c_str(),
                                n);
  const json& jd = v["dtype"];
  if (!jd.is_string())
    return Status::invalid_file("%s: tensor '%s' dtype is not a string", label.c_str(), n);
  const auto dt = dtype_from_name(jd.get<std::string>());
  if (!dt) {
    return Status::invalid_file("%s: tensor '%s' has unknown dtype '%s'", label.c_str(), n,
                                jd.get<std::string>().c_str());
  }
  const json& js = v["shape"];
  if (!js.is_array())
    return Status::invalid_file("%s: tensor '%s' shape is not an array", label.c_str(), n);
  if (js.size() > 8)
    return Status::invalid_file("%s: tensor '%s' has %zu dimensions (at most 8)", label.c_str(), n,
                                js.size());
  uint64_t elems = 1;
  bool overflow = false;
  std::vector<int64_t> shape;
  for (const json& d : js) {
    uint64_t x = 0;
    if (!as_u64(d, &x) || x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return Status::invalid_file("%s: tensor '%s' shape entry %s is not a non-negative integer",
                                  label.c_str(), n, d.dump().c_str());
    if (x != 0 && elems > std::numeric_limits<uint64_t>::max() / x) overflow = true;
    elems *= x;
    shape.push_back(static_cast<int64_t>(x));
  }
  const uint64_t bytes_per = dtype_bytes(*dt);
  if (overflow || elems > std::numeric_limits<uint64_t>::max() / bytes_per)
    return Status::invalid_file("%s: tensor '%s' element count overflows", label.c_str(), n);
  const json& jo = v["data_offsets"];
  uint64_t b = 0, e = 0;
  if (!jo.is_array() || jo.size() != 2 || !as_u64(jo[0], &b) || !as_u64(jo[1], &e))
    return Status::invalid_file("%s: tensor '%s' data_offsets is not [begin, end]", label.c_str(),
                                n);
  if (b > e)
    return Status::invalid_file("%s: tensor '%s' data_offsets begin %llu > end %llu", label.c_str(),
                                n, static_cast<unsigned long long>(b),
                                static_cast<unsigned long long>(e));
  if (e > data_size)
    return Status::invalid_file("%s: tensor '%s' ends at %llu, beyond the %llu data bytes",
                                label.c_str(), n, static_cast<unsigned long long>(e),
                                static_cast<unsigned long long>(data_size));
  if (e - b != elems * bytes_per)
    return Status::invalid_file(
        "%s: tensor '%s' has %llu bytes, but %s x %llu elements need %llu", label.c_str(), n,
        static_cast<unsigned long long>(e - b), std::string(to_string(*dt)).c_str(),
        static_cast<unsigned long long>(elems), static_cast<unsigned long long>(elems * bytes_per));
  out->name = name;
  out->dtype = *dt;
  out->shape = std::move(shape);
  *begin = b;
  return Status::ok();
}

}  // namespace

std::string_view to_string(Dtype d) {
  for (const DtypeName& t : kDtypes) {
    if (t.dtype == d) return t.name;
  }
  return "?";
}

std::optional<Dtype> dtype_from_name(std::string_view name) {
  for (const DtypeName& t : kDtypes) {
    if (t.name == name) return t.dtype;
  }
  return std::nullopt;
}

uint32_t dtype_bytes(Dtype d) {
  for (const DtypeName& t : kDtypes) {
    if (t.dtype == d) return t.bytes;
  }
  return 1;
}

uint64_t TensorView::n_elements() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  auto mapped = base::MappedFile::open(path);
  if (!mapped) return mapped.status();
  auto file = std::make_unique<base::MappedFile>(std::move(mapped).value());
  const std::span<const uint8_t> bytes = file->bytes();
  auto parsed = parse(bytes, path);
  if (!parsed) return parsed.status();
  parsed->file_ = std::move(file);
  return parsed;
}

Result<SafetensorsFile> SafetensorsFile::parse(std::span<const uint8_t> bytes, std::string label) {
  if (bytes.size() < 8)
    return Status::invalid_file("%s: %zu bytes, too short for a safetensors header", label.c_str(),
                                bytes.size());
  const uint64_t n = read_le64(bytes.data());
  if (n > kMaxHeaderBytes)
    return Status::invalid_file("%s: header length %llu exceeds the %llu-byte limit", label.c_str(),
                                static_cast<unsigned long long>(n),
                                static_cast<unsigned long long>(kMaxHeaderBytes));
  if (n > bytes.size() - 8)
    return Status::invalid_file("%s: header length %llu runs past the end of the %zu-byte file",
                                label.c_str(), static_cast<unsigned long long>(n), bytes.size());
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), n);
  bool dup = false;
  std::string dup_key;
  auto parsed = parse_json(text, label + " header", &dup, &dup_key);
  if (!parsed) return parsed.status();
  const json& header = *parsed;
  if (!header.is_object())
    return Status::invalid_file("%s: header is not a JSON object", label.c_str());
  if (dup)
    return Status::invalid_file("%s: header repeats the key '%s'", label.c_str(), dup_key.c_str());

  SafetensorsFile f;
  f.label_ = std::move(label);
  const std::span<const uint8_t> data = bytes.subspan(8 + n);
  std::vector<std::pair<uint64_t, TensorView>> entries;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") {
      if (!v.is_object())
        return Status::invalid_file("%s: __metadata__ is not an object", f.label_.c_str());
      for (const auto& [k, mv] : v.items()) {
        if (!mv.is_string())
          return Status::invalid_file("%s: __metadata__ value of '%s' is not a string",
                                      f.label_.c_str(), k.c_str());
        f.metadata_[k] = mv.get<std::string>();
      }
      continue;
    }
    if (name.empty())
      return Status::invalid_file("%s: a tensor has an empty name", f.label_.c_str());
    TensorView t;
    uint64_t begin = 0;
    DS4_TRY(parse_entry(f.label_, name, v, data.size(), &t, &begin));
    entries.emplace_back(begin, std::move(t));
  }
  // Sort by position so overlaps show up between neighbours (stable: ties keep the JSON order).
  std::stable_sort(entries.begin(), entries.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  uint64_t prev_end = 0;
  const std::string* prev_name = nullptr;
  for (auto& [begin, t] : entries) {
    const uint64_t size = t.n_elements() * dtype_bytes(t.dtype);
    if (prev_name != nullptr && begin < prev_end)
      return Status::invalid_file("%s: tensors '%s' and '%s' overlap", f.label_.c_str(),
                                  prev_name->c_str(), t.name.c_str());
    t.data = data.subspan(begin, size);
    prev_end = std::max(prev_end, begin + size);
    prev_name = &t.name;
  }
  for (auto& e : entries) {
    f.index_.emplace(e.second.name, f.tensors_.size());
    f.tensors_.push_back(std::move(e.second));
  }
  return f;
}

const TensorView* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Result<CheckpointDir> CheckpointDir::open(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::not_found("'%s' is not a directory", dir.c_str());
  CheckpointDir cd;
  cd.dir_ = dir;
  const fs::path index_path = fs::path(dir) / "model.safetensors.index.json";
  std::vector<std::string> files;
  std::vector<std::pair<std::string, std::string>> weight_map;  // tensor -> file
  if (fs::exists(index_path, ec)) {
    std::ifstream in(index_path);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in) return Status::io_error("cannot read '%s'", index_path.c_str());
    bool dup = false;
    std::string dup_key;
    auto parsed = parse_json(ss.str(), index_path.string(), &dup, &dup_key);
    if (!parsed) return parsed.status();
    if (dup)
      return Status::invalid_file("%s: repeats the key '%s'", index_path.c_str(), dup_key.c_str());
    const json& j = *parsed;
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      return Status::invalid_file("%s: no weight_map object", index_path.c_str());
    std::set<std::string> unique;
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string())
        return Status::invalid_file("%s: weight_map['%s'] is not a string", index_path.c_str(),
                                    name.c_str());
      const std::string fname = file.get<std::string>();
      // Shards must live in the checkpoint directory itself.
      if (fname.empty() || fname.find('/') != std::string::npos || fname == "." || fname == "..")
        return Status::invalid_file("%s: weight_map['%s'] = '%s' is not a plain file name",
                                    index_path.c_str(), name.c_str(), fname.c_str());
      weight_map.emplace_back(name, fname);
      if (unique.insert(fname).second) files.push_back(fname);
    }
  } else {
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.path().extension() == ".safetensors")
        files.push_back(entry.path().filename().string());
    }
    if (ec) return Status::io_error("cannot list '%s': %s", dir.c_str(), ec.message().c_str());
    std::sort(files.begin(), files.end());
  }
  if (files.empty()) return Status::not_found("no .safetensors files in '%s'", dir.c_str());
  std::unordered_map<std::string, size_t> shard_of_file;
  cd.shards_.reserve(files.size());
  for (const std::string& fname : files) {
    auto f = SafetensorsFile::open((fs::path(dir) / fname).string());
    if (!f) return f.status();
    shard_of_file[fname] = cd.shards_.size();
    cd.shards_.push_back(std::move(f).value());
  }
  for (const SafetensorsFile& s : cd.shards_) {
    for (const TensorView& t : s.tensors()) {
      if (!cd.by_name_.emplace(t.name, &t).second)
        return Status::invalid_file("tensor '%s' appears in more than one shard (again in '%s')",
                                    t.name.c_str(), s.label().c_str());
    }
  }
  for (const auto& [name, fname] : weight_map) {
    const SafetensorsFile& s = cd.shards_[shard_of_file[fname]];
    if (s.find(name) == nullptr)
      return Status::invalid_file("index maps '%s' to '%s', which does not hold it", name.c_str(),
                                  fname.c_str());
  }
  return cd;
}

const TensorView* CheckpointDir::find(std::string_view name) const {
  const auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<std::string> CheckpointDir::names() const {
  std::vector<std::string> out;
  out.reserve(by_name_.size());
  for (const auto& [name, unused] : by_name_) {
    (void)unused;
    out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ds4::convert
