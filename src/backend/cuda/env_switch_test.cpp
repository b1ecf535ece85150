// src/backend/cuda/env_switch_test.cpp: the parsing rules of the CUDA backend's DS4_CUDA_*
// settings (env_switch.h), on the host: a switch leaves its default for any value but the one
// that flips it, and a counted setting takes only its allowed values. Runs without a GPU.
#include "backend/cuda/env_switch.h"

#include <gtest/gtest.h>

#include <cstdlib>

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

TEST(EnvSwitch, OnByDefaultTurnsOffOnlyForZero) {
  {
    ScopedEnv e(kName, nullptr);
    EXPECT_TRUE(env_switch(kName, true));
  }
  for (const char* v : {"1", "", "off", "false", "00", " 0"}) {
    ScopedEnv e(kName, v);
    EXPECT_TRUE(env_switch(kName, true)) << "value '" << v << "'";
  }
  ScopedEnv e(kName, "0");
  EXPECT_FALSE(env_switch(kName, true));
}

TEST(EnvSwitch, OffByDefaultTurnsOnOnlyForOne) {
  {
    ScopedEnv e(kName, nullptr);
    EXPECT_FALSE(env_switch(kName, false));
  }
  for (const char* v : {"0", "", "on", "true", "01", "1 "}) {
    ScopedEnv e(kName, v);
    EXPECT_FALSE(env_switch(kName, false)) << "value '" << v << "'";
  }
  ScopedEnv e(kName, "1");
  EXPECT_TRUE(env_switch(kName, false));
}

TEST(EnvChoice, TakesOnlyAllowedValues) {
  {
    ScopedEnv e(kName, nullptr);
    EXPECT_EQ(env_choice(kName, {1, 2, 4}, 4), 4);
  }
  for (int v : {1, 2, 4}) {
    ScopedEnv e(kName, std::to_string(v).c_str());
    EXPECT_EQ(env_choice(kName, {1, 2, 4}, 4), v);
  }
  for (const char* v : {"3", "0", "", "2x", " 2", "02", "-1", "four"}) {
    ScopedEnv e(kName, v);
    EXPECT_EQ(env_choice(kName, {1, 2, 4}, 4), 4) << "value '" << v << "'";
  }
}

}  // namespace
}  // namespace ds4::backend::cuda
