// src/gguf/writer.cpp: header serialisation and positional (pwrite) tensor streaming.
#include "gguf/writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <utility>

#include "base/utf8.h"

namespace ds4::gguf {
namespace {

class ByteSink {
 public:
  template <class T>
  void put(T v) {
    const size_t at = buf_.size();
    buf_.resize(at + sizeof(T));
    std::memcpy(buf_.data() + at, &v, sizeof(T));
  }
  void put_bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
  }
  void put_string(std::string_view s) {
    put<uint64_t>(s.size());
    put_bytes(s.data(), s.size());
  }
  void put_value(const Value& v) {
    switch (v.type()) {
      case ValueType::kString: put_string(v.str()); return;
      case ValueType::kArray:
        put<uint32_t>(static_cast<uint32_t>(v.elem_type()));
        put<uint64_t>(v.size());
        if (v.elem_type() == ValueType::kString || v.elem_type() == ValueType::kArray) {
          for (const Value& item : v.items()) put_value(item);
        } else {
          put_bytes(v.packed().data(), v.packed().size());
        }
        return;
      default: {
        const uint64_t bits = v.raw_u64();
        put_bytes(&bits, scalar_bytes(v.type()));  // little-endian: low bytes hold the value
      }
    }
  }
  void pad_to(uint64_t alignment) {
    while (buf_.size() % alignment != 0) buf_.push_back(0);
  }
  const std::vector<uint8_t>& bytes() const { return buf_; }

 private:
  std::vector<uint8_t> buf_;
};

// Keys and tensor names: non-empty UTF-8 of bounded length, as the reader demands.
Status check_name(std::string_view what, const std::string& name) {
  if (name.empty() || name.size() > kMaxKeyBytes || !base::is_valid_utf8(name)) {
    return Status::invalid_argument("%.*s '%s' must be 1..%" PRIu64 " bytes of valid UTF-8",
                                    static_cast<int>(what.size()), what.data(), name.c_str(),
                                    kMaxKeyBytes);
  }
  return Status::ok();
}

}  // namespace

Result<Writer> Writer::create(const std::string& path, uint32_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    return Status::invalid_argument("GGUF alignment %u is not a power of two", alignment);
  }
  Writer w;
  w.path_ = path;
  w.partial_path_ = path + ".partial";
  w.alignment_ = alignment;
  w.fd_ = ::open(w.partial_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w.fd_ < 0) {
    return Status::io_error("cannot create '%s': %s", w.partial_path_.c_str(),
                            std::strerror(errno));
  }
  if (alignment != kDefaultAlignment) {
    DS4_TRY(w.add_metadata("general.alignment", Value::u32(alignment)));
  }
  return w;
}

Writer::Writer(Writer&& o) noexcept
    : path_(std::move(o.path_)),
      partial_path_(std::move(o.partial_path_)),
      fd_(std::exchange(o.fd_, -1)),
      alignment_(o.alignment_),
      header_written_(o.header_written_),
      finished_(std::exchange(o.finished_, true)),
      metadata_(std::move(o.metadata_)),
      key_index_(std::move(o.key_index_)),
      tensors_(std::move(o.tensors_)),
      tensor_index_(std::move(o.tensor_index_)),
      next_offset_(o.next_offset_),
      data_offset_(o.data_offset_),
      file_size_(o.file_size_),
      written_(std::move(o.written_)) {}

Writer::~Writer() {
  if (fd_ >= 0) ::close(fd_);
  if (!finished_ && !partial_path_.empty()) ::unlink(partial_path_.c_str());
}

Status Writer::add_metadata(std::string key, Value value) {
  if (header_written_) return Status::internal("add_metadata after write_header");
  DS4_TRY(check_name("metadata key", key));
  if (key_index_.count(key) != 0)
    return Status::invalid_argument("duplicate metadata key '%s'", key.c_str());
  if (key == "general.alignment" &&
      (value.type() != ValueType::kU32 || value.raw_u64() != alignment_)) {
    return Status::invalid_argument("general.alignment must be the u32 %u given to create()",
                                    alignment_);
  }
  key_index_.emplace(key, metadata_.size());
  metadata_.push_back({std::move(key), std::move(value)});
  return Status::ok();
}

Result<size_t> Writer::add_tensor(std::string name, GgufType type, std::vector<uint64_t> dims) {
  if (header_written_) return Status::internal("add_tensor after write_header");
  DS4_TRY(check_name("tensor name", name));
  if (tensor_index_.count(name) != 0)
    return Status::invalid_argument("duplicate tensor '%s'", name.c_str());
  if (dims.empty() || dims.size() > kMaxDims) {
    return Status::invalid_argument("tensor '%s' has %zu dimensions (must be 1..%u)", name.c_str(),
                                    dims.size(), kMaxDims);
  }
  const auto info = type_info(static_cast<uint32_t>(type));
  if (!info) return Status::invalid_argument("tensor '%s' has an unknown type", name.c_str());
  uint64_t n = 1;
  for (uint64_t d : dims) {
    if (d == 0 || __builtin_mul_overflow(n, d, &n)) {
      return Status::invalid_argument("tensor '%s' has a zero or overflowing dimension",
                                      name.c_str());
    }
  }
  if (dims[0] % info->block_elems != 0) {
    return Status::invalid_argument("tensor '%s' row length %" PRIu64
                                    " is not a multiple of the %s block (%u)",
                                    name.c_str(), dims[0], info->name.data(), info->block_elems);
  }
  const auto bytes = byte_size(type, n);
  if (!bytes) return Status::invalid_argument("tensor '%s' is too large", name.c_str());
  TensorInfo t;
  t.name = std::move(name);
  t.type = type;
  t.dims = std::move(dims);
  t.n_elements = n;
  t.n_bytes = *bytes;
  t.offset = next_offset_;
  next_offset_ = (next_offset_ + t.n_bytes + alignment_ - 1) / alignment_ * alignment_;
  tensor_index_.emplace(t.name, tensors_.size());
  tensors_.push_back(std::move(t));
  return tensors_.size() - 1;
}

Status Writer::write_all(const uint8_t* data, size_t n, uint64_t offset) {
  while (n > 0) {
    const ssize_t k = ::pwrite(fd_, data, n, static_cast<off_t>(offset));
    if (k < 0) {
      if (errno == EINTR) continue;
      return Status::io_error("writing '%s' at offset %" PRIu64 ": %s", partial_path_.c_str(),
                              offset, std::strerror(errno));
    }
    data += k;
    n -= static_cast<size_t>(k);
    offset += static_cast<uint64_t>(k);
  }
  return Status::ok();
}

Status Writer::write_header() {
  if (header_written_) return Status::internal("write_header called twice");
  ByteSink s;
  s.put<uint32_t>(kMagic);
  s.put<uint32_t>(kVersion);
  s.put<uint64_t>(tensors_.size());
  s.put<uint64_t>(metadata_.size());
  for (const KeyValue& kv : metadata_) {
    s.put_string(kv.key);
    s.put<uint32_t>(static_cast<uint32_t>(kv.value.type()));
    s.put_value(kv.value);
  }
  for (const TensorInfo& t : tensors_) {
    s.put_string(t.name);
    s.put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) s.put<uint64_t>(d);
    s.put<uint32_t>(static_cast<uint32_t>(t.type));
    s.put<uint64_t>(t.offset);
  }
  s.pad_to(alignment_);
  data_offset_ = s.bytes().size();
  file_size_ = data_offset_ + next_offset_;
  DS4_TRY(write_all(s.bytes().data(), s.bytes().size(), 0));
  // Sizing the file up front lets tensors arrive in any order; padding reads back as zeros.
  if (::ftruncate(fd_, static_cast<off_t>(file_size_)) != 0) {
    return Status::io_error("cannot size '%s' to %" PRIu64 " bytes: %s", partial_path_.c_str(),
                            file_size_, std::strerror(errno));
  }
  for (TensorInfo& t : tensors_) t.offset += data_offset_;
  written_ = std::make_unique<std::atomic<uint64_t>[]>(tensors_.size());
  header_written_ = true;
  return Status::ok();
}

Status Writer::write_tensor_data(size_t index, std::span<const uint8_t> bytes,
                                 uint64_t offset_in_tensor) {
  if (!header_written_ || finished_)
    return Status::internal("write_tensor_data outside header..finish");
  if (index >= tensors_.size()) return Status::invalid_argument("no tensor with index %zu", index);
  const TensorInfo& t = tensors_[index];
  if (offset_in_tensor > t.n_bytes || bytes.size() > t.n_bytes - offset_in_tensor) {
    return Status::out_of_range("write of %zu bytes at %" PRIu64 " exceeds tensor '%s' (%" PRIu64
                                " bytes)",
                                bytes.size(), offset_in_tensor, t.name.c_str(), t.n_bytes);
  }
  DS4_TRY(write_all(bytes.data(), bytes.size(), t.offset + offset_in_tensor));
  written_[index] += bytes.size();
  return Status::ok();
}

Status Writer::finish() {
  if (!header_written_) DS4_TRY(write_header());
  if (finished_) return Status::internal("finish called twice");
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const uint64_t got = written_[i].load();
    if (got != tensors_[i].n_bytes) {
      return Status::internal("tensor '%s' received %" PRIu64 " of %" PRIu64 " bytes",
                              tensors_[i].name.c_str(), got, tensors_[i].n_bytes);
    }
  }
  if (::fsync(fd_) != 0)
    return Status::io_error("fsync '%s': %s", partial_path_.c_str(), std::strerror(errno));
  if (::close(std::exchange(fd_, -1)) != 0) {
    return Status::io_error("close '%s': %s", partial_path_.c_str(), std::strerror(errno));
  }
  if (::rename(partial_path_.c_str(), path_.c_str()) != 0) {
    return Status::io_error("rename '%s' -> '%s': %s", partial_path_.c_str(), path_.c_str(),
                            std::strerror(errno));
  }
  finished_ = true;
  return Status::ok();
}

}  // namespace ds4::gguf
