// src/tokenizer/test_vocab.h: test-only access to the real DeepSeek vocabulary GGUF that the
// tokenizer_vocab_fixture CTest fixture builds (path in DS4_TEST_VOCAB, else the build's default).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "ds4/tokenizer.h"

namespace ds4::tokenizer::testing {

// Loaded once per test binary; nullptr (and a failed assertion) when the vocabulary is missing.
inline const Tokenizer* vocab_tokenizer() {
  static const std::unique_ptr<Tokenizer> tok = []() -> std::unique_ptr<Tokenizer> {
    const char* path = std::getenv("DS4_TEST_VOCAB");
#ifdef DS4_TEST_VOCAB_PATH
    if (path == nullptr) path = DS4_TEST_VOCAB_PATH;
#endif
    if (path == nullptr || !std::ifstream(path).good()) return nullptr;
    auto t = Tokenizer::open(path);
    if (!t) {
      ADD_FAILURE() << t.status().to_string();
      return nullptr;
    }
    return std::make_unique<Tokenizer>(std::move(t).value());
  }();
  return tok.get();
}

#define DS4_REQUIRE_VOCAB(tok)                                                \
  const ::ds4::Tokenizer* tok = ::ds4::tokenizer::testing::vocab_tokenizer(); \
  if (tok == nullptr)                                                         \
  GTEST_SKIP() << "no vocabulary GGUF (run through ctest, whose "             \
                  "fixture builds it, or set DS4_TEST_VOCAB)"

inline std::string source_dir() {
  const char* s = std::getenv("DS4_SOURCE_DIR");
  return s ? s : "";
}

}  // namespace ds4::tokenizer::testing
