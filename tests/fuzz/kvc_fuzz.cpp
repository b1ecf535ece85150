// libFuzzer target for the KVC cache-file parser (src/kv/kvc_file.cpp): any byte string must
// decode or fail with a Status, never crash, hang or read out of bounds (ASan/UBSan
// instrumented). A file that decodes with an intact tool-id map must re-encode to exactly the
// input bytes: accepting bytes the encoder would not write means a check is missing.
// Random bytes almost never match the footer's checksums (version 2), which would leave that
// invariant to the seeds alone; so each input is also tried with its footer's sums made right for
// its bytes, which takes every framing the fuzzer invents past the checksums.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "kv/kvc_file.h"
#include "kvc_sealed.h"

namespace {

void check_reencodes(std::span<const uint8_t> file) {
  auto v = ds4::kv::decode_kvc(file, {.max_tool_ids = 64});
  if (!v.is_ok() || !v->tool_map_error.empty()) return;
  const auto again = ds4::kv::encode_kvc(v->header, v->text, v->payload, v->tool_map);
  if (again.size() != file.size() || std::memcmp(again.data(), file.data(), file.size()) != 0) {
    std::fprintf(stderr, "re-encoded KVC file differs from the input (%zu vs %zu bytes)\n",
                 again.size(), file.size());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  check_reencodes(in);
  if (size >= ds4::kv::kKvcFooterBytes) check_reencodes(ds4::fuzz::with_sums_made_right(in));
  return 0;
}
