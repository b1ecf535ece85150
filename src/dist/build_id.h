// src/dist/build_id.h: the commit this program was built from ("0123456789ab", with "-dirty" when
// the checkout had changes, "unknown" outside git), compared at registration: a coordinator and
// its workers must come from the same build (features.md §10.1). Generated at build time by
// cmake/build_id.cmake.
#pragma once

#include <string_view>

namespace ds4::dist {

std::string_view build_id();

}  // namespace ds4::dist
