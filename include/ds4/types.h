// include/ds4/types.h: small value types shared by the public API headers.
#pragma once

#include <cstdint>

namespace ds4 {

using TokenId = int32_t;  // index into the model's vocabulary
using Pos = int64_t;      // absolute position of a token in a sequence

}  // namespace ds4
