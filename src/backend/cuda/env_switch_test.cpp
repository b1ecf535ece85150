// src/backend/cuda/env_switch_test.cpp: the parsing rules of the CUDA backend's DS4_CUDA_*
// settings (env_switch.h), on the host: a switch leaves its default for any value but the one
// that flips it, and a number is clamped to its range. Runs without a GPU.
#include "backend/cuda/env_switch.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

namespace ds4::backend::cuda {
namespace {

// Sets (or, for nullptr, removes) one variable for the test's scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

constexpr const char* kName = "DS4_CUDA_TEST_SETTING";

// A switch with its default, the one value that flips it, and values that must not.
struct SwitchCase {
  bool default_on;
  const char* flips;
  std::vector<const char*> keeps;
};

TEST(EnvSwitch, LeavesTheDefaultForAnyValueButTheFlippingOne) {
  const SwitchCase cases[] = {
      {true, "0", {"1", "", "off", "false", "00", " 0"}},
      {false, "1", {"0", "", "on", "true", "01", "1 "}},
  };
  for (const SwitchCase& c : cases) {
    {
      ScopedEnv e(kName, nullptr);
      EXPECT_EQ(env_switch(kName, c.default_on), c.default_on);
    }
    for (const char* v : c.keeps) {
      ScopedEnv e(kName, v);
      EXPECT_EQ(env_switch(kName, c.default_on), c.default_on) << "value '" << v << "'";
    }
    ScopedEnv e(kName, c.flips);
    EXPECT_EQ(env_switch(kName, c.default_on), !c.default_on) << "value '" << c.flips << "'";
  }
}

TEST(EnvInt, ClampsANumberOrKeepsTheDefaultWhenUnset) {
  {
    ScopedEnv e(kName, nullptr);
    EXPECT_EQ(env_int(kName, 4, 0, 100), 4);
  }
  const struct {
    const char* value;
    int expected;
  } cases[] = {{"7", 7}, {"0", 0}, {"100", 100}, {"250", 100}, {"-3", 0}, {"abc", 0}, {"12x", 12}};
  for (const auto& c : cases) {
    ScopedEnv e(kName, c.value);
    EXPECT_EQ(env_int(kName, 4, 0, 100), c.expected) << "value '" << c.value << "'";
  }
}

}  // namespace
}  // namespace ds4::backend::cuda
