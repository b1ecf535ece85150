// libFuzzer target for the safetensors reader: any byte string must parse or fail with a Status,
// never crash or read out of bounds (ASan/UBSan instrumented). Parsed files are walked fully.
#include <cstddef>
#include <cstdint>
#include <span>

#include "tools/convert/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = ds4::convert::SafetensorsFile::parse(std::span<const uint8_t>(data, size), "fuzz");
  if (!f.is_ok()) return 0;
  size_t sink = 0;
  for (const auto& t : f->tensors()) {
    sink += t.name.size() + t.shape.size();
    if (!t.data.empty())
      sink += t.data.front() + t.data.back();  // touches both ends of each tensor
  }
  return sink == SIZE_MAX ? 1 : 0;
}
