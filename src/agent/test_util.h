// src/agent/test_util.h: fixtures of the agent tests: a real temporary directory and file helpers.
// Owns: creating and removing the directory; nothing here is mocked.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

namespace ds4::agent::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ds4_agent_test_XXXXXX";
    if (::mkdtemp(tmpl.data())) path_ = std::filesystem::canonical(tmpl).string();
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(std::string_view rel) const { return path_ + "/" + std::string(rel); }

 private:
  std::string path_;
};

inline void put_file(const std::string& path, std::string_view bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string get_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// "line 1\nline 2\n...line n\n"
inline std::string numbered_lines(int n, std::string_view prefix = "line ") {
  std::string out;
  for (int i = 1; i <= n; ++i) out += std::string(prefix) + std::to_string(i) + "\n";
  return out;
}

}  // namespace ds4::agent::testing
