// src/model/fingerprint.cpp: ModelInfo::fingerprint (see fingerprint.h).
#include "model/fingerprint.h"

#include <algorithm>
#include <cstdio>

#include "base/checksum.h"
#include "model/slice_file.h"

namespace ds4::model {
namespace {

// Tensors sampled, and bytes read from each end of each.
constexpr size_t kFingerprintTensors = 16;
constexpr size_t kFingerprintBytes = 4096;

std::string computed_fingerprint(const gguf::Reader& file) {
  base::Checksum a(0x6d6f64656c), b(0x7765696768);  // "model", "weigh"
  const auto feed = [&](std::span<const uint8_t> bytes) {
    a.update(bytes);
    b.update(bytes);
  };
  const auto feed_text = [&](const std::string& s) {
    feed({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
  };
  const auto& tensors = file.tensors();
  feed_text(std::to_string(file.file_size()) + "/" + std::to_string(file.data_offset()) + "/" +
            std::to_string(tensors.size()));
  const size_t step = std::max<size_t>(1, tensors.size() / kFingerprintTensors);
  for (size_t i = 0; i < tensors.size(); i += step) {
    const gguf::TensorInfo& t = tensors[i];
    const std::span<const uint8_t> data = file.tensor_data(t);
    feed_text("/" + t.name + ":" + std::to_string(static_cast<int>(t.type)));
    const size_t head = std::min(data.size(), kFingerprintBytes);
    feed(data.first(head));
    const size_t tail = std::min(data.size() - head, kFingerprintBytes);
    feed(data.last(tail));
  }
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(a.digest()),
                static_cast<unsigned long long>(b.digest()));
  return hex;
}

}  // namespace

std::string model_fingerprint(const gguf::Reader& file) {
  // A slice file's own bytes are a part of the model: it names the whole file it was cut from
  // (read_slice_mark checked the value when the file was validated).
  if (const auto recorded = file.get_string(kSliceFingerprintKey); recorded.is_ok())
    return std::string(*recorded);
  return computed_fingerprint(file);
}

}  // namespace ds4::model
