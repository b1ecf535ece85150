// libFuzzer target for distributed inference's wire decoder (src/dist/wire.cpp): any byte string
// must decode or fail with a Status, never crash, hang, read out of bounds or allocate beyond
// what its bytes can hold (ASan/UBSan instrumented, small limits). A message that decodes must
// encode again to bytes that decode to the same record, and, when its values hold no NaN (whose
// f16 payload bits may change on the way), to exactly the input.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "dist/wire.h"

namespace {

using ds4::dist::MessageType;

bool has_nan(const std::vector<float>& v) {
  for (float f : v) {
    if (std::isnan(f)) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ds4::dist::WireLimits limits{.max_tokens = 4096,
                                     .max_hidden_width = 4096,
                                     .max_body_bytes = 1 << 20,
                                     .max_text_bytes = 256,
                                     .max_vocab = 1 << 16,
                                     .max_hops = 8};
  const std::span<const uint8_t> in(data, size);
  auto m = ds4::dist::decode(in, limits);
  if (!m.is_ok()) return 0;
  std::vector<uint8_t> again;
  bool nan = false;
  switch (m->type) {
    case MessageType::kHello: again = ds4::dist::encode(m->hello); break;
    case MessageType::kWork:
      again = ds4::dist::encode(m->work);
      nan = has_nan(m->work.hidden);
      break;
    case MessageType::kResult:
      again = ds4::dist::encode(m->result);
      nan = has_nan(m->result.values);
      break;
    case MessageType::kError: again = ds4::dist::encode(m->error); break;
    case MessageType::kAccept:
    case MessageType::kBeat: again = ds4::dist::encode_beat(m->type, m->beat.incarnation); break;
    case MessageType::kRelease: again = ds4::dist::encode_release(m->release); break;
    case MessageType::kStateSave:
    case MessageType::kState:
    case MessageType::kStateLoad: again = ds4::dist::encode(m->state, m->type); break;
  }
  if (!ds4::dist::decode(again, limits).is_ok()) {
    std::fprintf(stderr, "a decoded message does not decode after encoding\n");
    std::abort();
  }
  if (!nan && (again.size() != size || std::memcmp(again.data(), data, size) != 0)) {
    std::fprintf(stderr, "re-encoded message differs from the input (%zu vs %zu bytes)\n",
                 again.size(), size);
    std::abort();
  }
  return 0;
}
