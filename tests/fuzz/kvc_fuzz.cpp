// libFuzzer target for the KVC cache-file parser (src/kv/kvc_file.cpp): any byte string must
// decode or fail with a Status, never crash, hang or read out of bounds (ASan/UBSan
// instrumented). A file that decodes with an intact tool-id map must re-encode to exactly the
// input bytes: accepting bytes the encoder would not write means a check is missing.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>

#include "kv/kvc_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto v = ds4::kv::decode_kvc(std::span<const uint8_t>(data, size), {.max_tool_ids = 64});
  if (!v.is_ok() || !v->tool_map_error.empty()) return 0;
  const auto again = ds4::kv::encode_kvc(v->header, v->text, v->payload, v->tool_map);
  if (again.size() != size || std::memcmp(again.data(), data, size) != 0) {
    std::fprintf(stderr, "re-encoded KVC file differs from the input (%zu vs %zu bytes)\n",
                 again.size(), size);
    std::abort();
  }
  return 0;
}
