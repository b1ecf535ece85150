// src/eval/selftest.h: --self-test-extractors (features.md §7.7): built-in checks an installed
// binary can run without a model or a test framework.
// Owns: the check list (trace blocks copied exactly with fake markers inside, the answer marker
// preferred over later prose, the loose fallbacks, leading zeros, line-set marker preference,
// thinking stripped).
// Does not own: printing (the app prints "answer extractor self-tests passed" on OK).
#pragma once

#include "ds4/status.h"

namespace ds4::eval {

// OK, or an internal error naming the first check that failed with what it got.
Status run_extractor_self_tests();

}  // namespace ds4::eval
