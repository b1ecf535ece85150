// Protects: Status/Result semantics and the DS4_TRY / DS4_ASSIGN_OR_RETURN control flow.
#include "ds4/status.h"

#include <gtest/gtest.h>

namespace ds4 {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return Status::invalid_argument("value %d is not positive", v);
  return v;
}

Status double_it(int v, int* out) {
  DS4_ASSIGN_OR_RETURN(const int x, parse_positive(v));
  *out = 2 * x;
  return Status::ok();
}

Status chain(int v) {
  DS4_TRY(parse_positive(v));
  DS4_TRY(Status::ok());
  return Status::not_found("reached the end with %d", v);
}

TEST(Status, OkAndErrorCarryCodeAndMessage) {
  EXPECT_TRUE(Status::ok().is_ok());
  const Status s = Status::invalid_file("bad magic 0x%08x at offset %d", 0x12345678u, 0);
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidFile);
  EXPECT_EQ(s.message(), "bad magic 0x12345678 at offset 0");
  EXPECT_EQ(s.to_string(), "invalid file: bad magic 0x12345678 at offset 0");
  EXPECT_EQ(s.with_context("m.gguf").message(), "m.gguf: bad magic 0x12345678 at offset 0");
}

TEST(Status, ResultHoldsValueOrError) {
  Result<int> good = parse_positive(3);
  ASSERT_TRUE(good.is_ok());
  EXPECT_EQ(*good, 3);
  Result<int> bad = parse_positive(-1);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("-1"), std::string::npos);
}

TEST(Status, OkStatusCannotMasqueradeAsError) {
  Result<int> r{Status::ok()};
  EXPECT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

TEST(Status, TryMacrosPropagate) {
  int out = 0;
  EXPECT_TRUE(double_it(21, &out).is_ok());
  EXPECT_EQ(out, 42);
  EXPECT_EQ(double_it(0, &out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(chain(-5).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(chain(5).code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace ds4
