// libFuzzer target for the GGUF reader: any byte string must parse or fail with a Status, never
// crash, hang or read out of bounds (ASan/UBSan instrumented). Parsed files are walked fully.
#include <cstddef>
#include <cstdint>
#include <span>

#include "gguf/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ds4::gguf::ReaderLimits limits;
  limits.max_metadata_bytes = 64 << 20;
  auto r = ds4::gguf::Reader::parse(std::span<const uint8_t>(data, size), limits);
  if (!r.is_ok()) return 0;
  size_t sink = 0;
  for (const auto& kv : r->metadata()) sink += kv.value.to_display(4).size();
  for (const auto& t : r->tensors()) {
    const auto bytes = r->tensor_data(t);
    if (!bytes.empty()) sink += bytes.front() + bytes.back();  // touches both ends of each tensor
  }
  return sink == SIZE_MAX ? 1 : 0;
}
