// Where ds4-server's API key comes from: one source at most (--api-key, --api-key-file, else
// DS4_API_KEY), an empty or unprintable key refused whatever its source, the key file's first
// line without its line ending; and which hosts are loopback (no warning without a key).
#include "apps/server/api_key.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace ds4::server {
namespace {

std::string key_file(const std::string& text) {
  char path[] = "/tmp/ds4-key-XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(ApiKey, OneSourceAtMost) {
  EXPECT_EQ(*resolve_api_key({}), "");
  EXPECT_EQ(*resolve_api_key({.flag = "k1"}), "k1");
  EXPECT_EQ(*resolve_api_key({.env = "k3"}), "k3");
  EXPECT_EQ(*resolve_api_key({.flag = "k1", .env = "k3"}), "k1");  // a flag wins over the env
  const std::string f = key_file("k2\r\nsecond line\n");
  EXPECT_EQ(*resolve_api_key({.file = f}), "k2");
  EXPECT_EQ(*resolve_api_key({.file = f, .env = "k3"}), "k2");
  EXPECT_FALSE(resolve_api_key({.flag = "k1", .file = f}).is_ok());
  std::remove(f.c_str());
}

TEST(ApiKey, EmptyOrUnprintableKeysAreRefused) {
  const auto empty = resolve_api_key({.flag = ""});
  ASSERT_FALSE(empty.is_ok());
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos);
  EXPECT_FALSE(resolve_api_key({.env = ""}).is_ok());
  const std::string f = key_file("\n");
  EXPECT_FALSE(resolve_api_key({.file = f}).is_ok());
  std::remove(f.c_str());
  EXPECT_FALSE(resolve_api_key({.flag = "two words"}).is_ok());
  EXPECT_FALSE(resolve_api_key({.flag = std::string("a\x01")}).is_ok());
  EXPECT_FALSE(resolve_api_key({.file = "/nonexistent/ds4-key"}).is_ok());
}

TEST(ApiKey, Loopback) {
  for (const char* h : {"127.0.0.1", "127.1.2.3", "localhost", "::1"}) EXPECT_TRUE(is_loopback(h));
  for (const char* h : {"0.0.0.0", "::", "192.168.1.4", "10.0.0.1"}) EXPECT_FALSE(is_loopback(h));
}

}  // namespace
}  // namespace ds4::server
