// libFuzzer target for ds4-agent's session-file decoder (src/agent/session_file.cpp): any byte
// string must decode or fail with a Status, never crash, hang or read out of bounds (ASan/UBSan
// instrumented). Each input is tried three ways: as a whole file; with its footer's checksums
// made right for its bytes (random bytes almost never match them, which would leave the record
// parser to the seeds alone); and as the KVC text of a sound file (the record parser on its own).
// A record that decodes must encode again and decode to the same record: accepting values the
// encoder cannot write back means a check is missing.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string_view>
#include <vector>

#include "agent/session_file.h"
#include "kvc_sealed.h"

namespace {

void check_record(std::string_view text) {
  auto r = ds4::agent::decode_session_record(text);
  if (!r.is_ok()) return;
  auto again = ds4::agent::encode_session_record(*r);
  if (!again.is_ok()) {
    std::fprintf(stderr, "a decoded record does not encode: %s\n",
                 again.status().to_string().c_str());
    std::abort();
  }
  auto back = ds4::agent::decode_session_record(*again);
  if (!back.is_ok() || !(*back == *r)) {
    std::fprintf(stderr, "a re-encoded record decodes to another record\n");
    std::abort();
  }
}

void check_file(std::span<const uint8_t> file) {
  auto v = ds4::agent::decode_session_file(file);
  if (v.is_ok())
    check_record(std::string_view(reinterpret_cast<const char*>(file.data()), file.size())
                     .substr(ds4::kv::kKvcHeaderBytes + 4));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  check_file(in);
  if (size >= ds4::kv::kKvcFooterBytes) check_file(ds4::fuzz::with_sums_made_right(in));
  check_record(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
