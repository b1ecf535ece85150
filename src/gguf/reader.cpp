// src/gguf/reader.cpp: bounds-checked GGUF v3 parser.
// Every read goes through Parser, which knows how many bytes remain and reports the offset of
// whatever it could not read. Counts are checked against the bytes that could possibly hold them
// before anything is allocated.
#include "gguf/reader.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>

#include "base/utf8.h"

namespace ds4::gguf {

class Parser {
 public:
  Parser(std::span<const uint8_t> bytes, const ReaderLimits& limits) : b_(bytes), limits_(limits) {}

  Status parse(Reader& r);

 private:
  uint64_t remaining() const { return b_.size() - pos_; }

  template <class T>
  Status read(T* out, const char* what) {
    if (remaining() < sizeof(T)) {
      return Status::invalid_file("truncated: %s needs %zu bytes at offset %" PRIu64
                                  " but the file ends at %zu",
                                  what, sizeof(T), pos_, b_.size());
    }
    std::memcpy(out, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::ok();
  }

  Status read_string(std::string* out, const char* what, uint64_t max_len);
  Status charge(uint64_t bytes, uint64_t at);
  Status read_value(ValueType type, Value* out, uint32_t depth, const std::string& key);
  Status read_array(Value* out, uint32_t depth, const std::string& key);
  Status read_metadata(Reader& r, uint64_t n_kv);
  Status read_tensor_info(Reader& r, uint64_t index);
  Status check_layout(Reader& r);

  std::span<const uint8_t> b_;
  ReaderLimits limits_;
  uint64_t pos_ = 0;
  uint64_t charged_ = 0;
};

Status Parser::charge(uint64_t bytes, uint64_t at) {
  // Accounts the memory metadata will occupy once parsed; stops files that are valid but would
  // need absurd amounts of memory (many tiny strings inflate 8 file bytes into ~90 bytes each).
  if (bytes > limits_.max_metadata_bytes || charged_ > limits_.max_metadata_bytes - bytes) {
    return Status::out_of_range("metadata at offset %" PRIu64 " needs more than the %" PRIu64
                                "-byte metadata memory limit",
                                at, limits_.max_metadata_bytes);
  }
  charged_ += bytes;
  return Status::ok();
}

Status Parser::read_string(std::string* out, const char* what, uint64_t max_len) {
  const uint64_t at = pos_;
  uint64_t len = 0;
  DS4_TRY(read(&len, what));
  if (len > remaining()) {
    return Status::invalid_file("%s at offset %" PRIu64 " claims %" PRIu64
                                " bytes but only %" PRIu64 " remain in the file",
                                what, at, len, remaining());
  }
  if (len > max_len) {
    return Status::invalid_file("%s at offset %" PRIu64 " is %" PRIu64 " bytes (limit %" PRIu64 ")",
                                what, at, len, max_len);
  }
  DS4_TRY(charge(sizeof(Value) + len, at));
  out->assign(reinterpret_cast<const char*>(b_.data() + pos_), static_cast<size_t>(len));
  pos_ += len;
  return Status::ok();
}

Status Parser::read_value(ValueType type, Value* out, uint32_t depth, const std::string& key) {
  const uint64_t at = pos_;
  switch (type) {
    case ValueType::kString: {
      std::string s;
      DS4_TRY(read_string(&s, "string value", UINT64_MAX));
      *out = Value::string(std::move(s));
      return Status::ok();
    }
    case ValueType::kArray: return read_array(out, depth + 1, key);
    default: break;
  }
  const uint32_t w = scalar_bytes(type);
  if (remaining() < w) {
    return Status::invalid_file("truncated: value of key '%s' (%u bytes) at offset %" PRIu64,
                                key.c_str(), w, at);
  }
  uint8_t raw[8] = {};
  std::memcpy(raw, b_.data() + pos_, w);
  pos_ += w;
  if (type == ValueType::kBool && raw[0] > 1) {
    return Status::invalid_file("bool value of key '%s' at offset %" PRIu64
                                " is %u (must be 0 or 1)",
                                key.c_str(), at, raw[0]);
  }
  *out = Value::packed_array(type, 1, std::vector<uint8_t>(raw, raw + w)).at(0);
  return Status::ok();
}

Status Parser::read_array(Value* out, uint32_t depth, const std::string& key) {
  const uint64_t at = pos_;
  if (depth > limits_.max_array_depth) {
    return Status::invalid_file(
        "arrays of key '%s' nested deeper than %u levels at offset %" PRIu64, key.c_str(),
        limits_.max_array_depth, at);
  }
  uint32_t elem_id = 0;
  uint64_t count = 0;
  DS4_TRY(read(&elem_id, "array element type"));
  DS4_TRY(read(&count, "array length"));
  if (!is_valid_value_type(elem_id)) {
    return Status::invalid_file("array of key '%s' at offset %" PRIu64
                                " has unknown element type %u",
                                key.c_str(), at, elem_id);
  }
  const auto elem = static_cast<ValueType>(elem_id);
  // The smallest encoding an element can have: scalar width, 8-byte string length, or the
  // 12-byte header of an inner array. The count cannot exceed what the remaining bytes can hold.
  const uint64_t min_elem = elem == ValueType::kString  ? 8
                            : elem == ValueType::kArray ? 12
                                                        : scalar_bytes(elem);
  if (count > remaining() / min_elem) {
    return Status::invalid_file(
        "array of key '%s' at offset %" PRIu64 " claims %" PRIu64
        " elements of %s, more than the %" PRIu64 " remaining bytes can hold",
        key.c_str(), at, count, std::string(to_string(elem)).c_str(), remaining());
  }
  if (elem != ValueType::kString && elem != ValueType::kArray) {
    const uint64_t n_bytes = count * min_elem;
    DS4_TRY(charge(n_bytes, at));
    std::vector<uint8_t> bytes(b_.begin() + static_cast<ptrdiff_t>(pos_),
                               b_.begin() + static_cast<ptrdiff_t>(pos_ + n_bytes));
    if (elem == ValueType::kBool) {
      for (uint64_t i = 0; i < count; ++i) {
        if (bytes[i] > 1) {
          return Status::invalid_file("bool element %" PRIu64 " of key '%s' at offset %" PRIu64
                                      " is %u (must be 0 or 1)",
                                      i, key.c_str(), pos_ + i, bytes[i]);
        }
      }
    }
    pos_ += n_bytes;
    *out = Value::packed_array(elem, count, std::move(bytes));
    return Status::ok();
  }
  std::vector<Value> items;
  items.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    Value v;
    DS4_TRY(read_value(elem, &v, depth, key));
    items.push_back(std::move(v));
  }
  *out = Value::nested_array(elem, std::move(items));
  return Status::ok();
}

Status Parser::read_metadata(Reader& r, uint64_t n_kv) {
  r.metadata_.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    const uint64_t at = pos_;
    KeyValue kv;
    DS4_TRY(read_string(&kv.key, "metadata key", kMaxKeyBytes));
    if (kv.key.empty())
      return Status::invalid_file("metadata key %" PRIu64 " at offset %" PRIu64 " is empty", i, at);
    if (!base::is_valid_utf8(kv.key)) {
      return Status::invalid_file(
          "metadata key %" PRIu64 " at offset %" PRIu64 " is not valid UTF-8", i, at);
    }
    if (r.key_index_.count(kv.key) != 0) {
      return Status::invalid_file("duplicate metadata key '%s' at offset %" PRIu64, kv.key.c_str(),
                                  at);
    }
    uint32_t type_id = 0;
    const uint64_t type_at = pos_;
    DS4_TRY(read(&type_id, "metadata value type"));
    if (!is_valid_value_type(type_id)) {
      return Status::invalid_file("metadata key '%s' has unknown value type %u at offset %" PRIu64,
                                  kv.key.c_str(), type_id, type_at);
    }
    DS4_TRY(read_value(static_cast<ValueType>(type_id), &kv.value, 0, kv.key));
    r.key_index_.emplace(kv.key, r.metadata_.size());
    r.metadata_.push_back(std::move(kv));
  }
  return Status::ok();
}

Status Parser::read_tensor_info(Reader& r, uint64_t index) {
  const uint64_t at = pos_;
  TensorInfo t;
  DS4_TRY(read_string(&t.name, "tensor name", kMaxKeyBytes));
  if (t.name.empty())
    return Status::invalid_file("tensor %" PRIu64 " at offset %" PRIu64 " has an empty name", index,
                                at);
  if (!base::is_valid_utf8(t.name)) {
    return Status::invalid_file("tensor %" PRIu64 " name at offset %" PRIu64 " is not valid UTF-8",
                                index, at);
  }
  if (r.tensor_index_.count(t.name) != 0) {
    return Status::invalid_file("duplicate tensor name '%s' at offset %" PRIu64, t.name.c_str(),
                                at);
  }
  const char* name = t.name.c_str();
  uint32_t n_dims = 0;
  DS4_TRY(read(&n_dims, "tensor dimension count"));
  if (n_dims == 0 || n_dims > kMaxDims) {
    return Status::invalid_file("tensor '%s' has %u dimensions (must be 1..%u)", name, n_dims,
                                kMaxDims);
  }
  t.n_elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    uint64_t dim = 0;
    DS4_TRY(read(&dim, "tensor dimension"));
    if (dim == 0) return Status::invalid_file("tensor '%s' dimension %u is zero", name, d);
    if (__builtin_mul_overflow(t.n_elements, dim, &t.n_elements) ||
        t.n_elements > (uint64_t{1} << 62)) {
      return Status::invalid_file("tensor '%s' element count overflows at dimension %u", name, d);
    }
    t.dims.push_back(dim);
  }
  uint32_t type_id = 0;
  const uint64_t type_at = pos_;
  DS4_TRY(read(&type_id, "tensor type"));
  const auto info = type_info(type_id);
  if (!info) {
    return Status::invalid_file("tensor '%s' has unknown type id %u at offset %" PRIu64, name,
                                type_id, type_at);
  }
  t.type = info->type;
  if (t.dims[0] % info->block_elems != 0) {
    return Status::invalid_file("tensor '%s' row length %" PRIu64
                                " is not a multiple of the %s block (%u)",
                                name, t.dims[0], info->name.data(), info->block_elems);
  }
  const auto n_bytes = byte_size(t.type, t.n_elements);
  if (!n_bytes) return Status::invalid_file("tensor '%s' byte size overflows", name);
  t.n_bytes = *n_bytes;
  DS4_TRY(read(&t.offset, "tensor offset"));  // relative for now; made absolute in check_layout
  r.tensor_index_.emplace(t.name, r.tensors_.size());
  r.tensors_.push_back(std::move(t));
  return Status::ok();
}

Status Parser::check_layout(Reader& r) {
  const uint64_t a = r.alignment_;
  const uint64_t dir_end = pos_;
  r.data_offset_ = (dir_end + a - 1) / a * a;
  if (r.tensors_.empty()) return Status::ok();
  if (r.data_offset_ > b_.size()) {
    return Status::invalid_file("tensor data should start at offset %" PRIu64
                                " but the file ends at %zu",
                                r.data_offset_, b_.size());
  }
  const uint64_t data_bytes = b_.size() - r.data_offset_;
  std::vector<const TensorInfo*> by_offset;
  for (TensorInfo& t : r.tensors_) {
    if (t.offset % a != 0) {
      return Status::invalid_file("tensor '%s' offset %" PRIu64
                                  " is not a multiple of the alignment %" PRIu64,
                                  t.name.c_str(), t.offset, a);
    }
    if (t.offset > data_bytes || t.n_bytes > data_bytes - t.offset) {
      return Status::invalid_file("tensor '%s' (%" PRIu64 " bytes at data offset %" PRIu64
                                  ") extends past the end of the file (%" PRIu64 " data bytes)",
                                  t.name.c_str(), t.n_bytes, t.offset, data_bytes);
    }
    t.offset += r.data_offset_;
    by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* x, const TensorInfo* y) { return x->offset < y->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo& prev = *by_offset[i - 1];
    const TensorInfo& cur = *by_offset[i];
    if (cur.offset < prev.offset + prev.n_bytes) {
      return Status::invalid_file(
          "tensor '%s' at offset %" PRIu64 " overlaps tensor '%s' (%" PRIu64 "..%" PRIu64 ")",
          cur.name.c_str(), cur.offset, prev.name.c_str(), prev.offset, prev.offset + prev.n_bytes);
    }
  }
  return Status::ok();
}

Status Parser::parse(Reader& r) {
  if (b_.size() < 24) {
    return Status::invalid_file("file is %zu bytes, too small for a GGUF header (24 bytes)",
                                b_.size());
  }
  uint32_t magic = 0;
  DS4_TRY(read(&magic, "magic"));
  if (magic != kMagic) {
    return Status::invalid_file("bad magic 0x%08x at offset 0 (not a GGUF file)", magic);
  }
  DS4_TRY(read(&r.version_, "version"));
  if (r.version_ != kVersion) {
    return Status::invalid_file("unsupported GGUF version %u at offset 4 (only version 3 is read)",
                                r.version_);
  }
  uint64_t n_tensors = 0, n_kv = 0;
  DS4_TRY(read(&n_tensors, "tensor count"));
  DS4_TRY(read(&n_kv, "metadata count"));
  // Smallest possible entries: a key-value pair is 8+1 (key) + 4 (type) + 1 (u8) = 14 bytes; a
  // tensor entry is 8+1 (name) + 4 (n_dims) + 8 (one dim) + 4 (type) + 8 (offset) = 33 bytes.
  if (n_kv > remaining() / 14) {
    return Status::invalid_file("metadata count %" PRIu64
                                " at offset 16 is impossible for a %zu-byte file",
                                n_kv, b_.size());
  }
  if (n_tensors > remaining() / 33) {
    return Status::invalid_file("tensor count %" PRIu64
                                " at offset 8 is impossible for a %zu-byte file",
                                n_tensors, b_.size());
  }
  DS4_TRY(read_metadata(r, n_kv));
  if (const Value* a = r.find("general.alignment")) {
    const auto v = a->type() == ValueType::kU32 ? a->as_u64() : std::nullopt;
    if (!v || *v == 0 || (*v & (*v - 1)) != 0) {
      return Status::invalid_file(
          "general.alignment must be a non-zero power-of-two u32, got %s %s",
          std::string(to_string(a->type())).c_str(), a->to_display().c_str());
    }
    r.alignment_ = static_cast<uint32_t>(*v);
  }
  r.tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) DS4_TRY(read_tensor_info(r, i));
  return check_layout(r);
}

Result<Reader> Reader::parse(std::span<const uint8_t> bytes, const ReaderLimits& limits) {
  Reader r;
  r.bytes_ = bytes;
  Parser p(bytes, limits);
  DS4_TRY(p.parse(r));
  return r;
}

Result<Reader> Reader::open(const std::string& path, const ReaderLimits& limits) {
  auto file = base::MappedFile::open(path);
  if (!file) return file.status();
  const std::span<const uint8_t> bytes = file->bytes();  // stable across the move below
  auto r = parse(bytes, limits);
  if (!r) return r.status().with_context(path);
  r->file_ = std::move(file).value();
  return r;
}

const Value* Reader::find(std::string_view key) const {
  const auto it = key_index_.find(std::string(key));
  return it == key_index_.end() ? nullptr : &metadata_[it->second].value;
}

const TensorInfo* Reader::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

Status wrong_type(std::string_view key, const Value& v, const char* want) {
  return Status::invalid_model("metadata key '%.*s' is %s, expected %s",
                               static_cast<int>(key.size()), key.data(),
                               std::string(to_string(v.type())).c_str(), want);
}

Status missing(std::string_view key) {
  return Status::invalid_model("missing metadata key '%.*s'", static_cast<int>(key.size()),
                               key.data());
}

}  // namespace

Result<uint32_t> Reader::get_u32(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(key);
  if (v->type() != ValueType::kU32) return wrong_type(key, *v, "u32");
  return static_cast<uint32_t>(v->raw_u64());
}

Result<uint64_t> Reader::get_u64_like(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(key);
  if (v->type() != ValueType::kU64 && v->type() != ValueType::kU32)
    return wrong_type(key, *v, "u64 or u32");
  return v->raw_u64();
}

Result<double> Reader::get_f64_like(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(key);
  switch (v->type()) {
    case ValueType::kF32:
    case ValueType::kF64:
    case ValueType::kU32:
    case ValueType::kI32: return *v->as_f64();
    default: return wrong_type(key, *v, "f32, f64, u32 or i32");
  }
}

Result<bool> Reader::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(key);
  if (v->type() != ValueType::kBool) return wrong_type(key, *v, "bool");
  return v->raw_u64() != 0;
}

Result<std::string_view> Reader::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(key);
  if (v->type() != ValueType::kString) return wrong_type(key, *v, "string");
  return std::string_view(v->str());
}

}  // namespace ds4::gguf
