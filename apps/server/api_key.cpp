// apps/server/api_key.cpp: the API key's source and the loopback test.
#include "apps/server/api_key.h"

#include <fstream>

namespace ds4::server {
namespace {

Result<std::string> checked(std::string key, const char* source) {
  if (key.empty()) {
    return Status::invalid_argument(
        "%s gives an empty API key: that would leave the server open; give a key or none", source);
  }
  for (unsigned char c : key) {
    if (c <= 0x20 || c == 0x7f) {
      return Status::invalid_argument("%s gives an API key with a space or control character",
                                      source);
    }
  }
  return key;
}

}  // namespace

Result<std::string> resolve_api_key(const ApiKeySources& s) {
  if (s.flag && s.file)
    return Status::invalid_argument("give --api-key or --api-key-file, not both");
  if (s.flag) return checked(*s.flag, "--api-key");
  if (s.file) {
    std::ifstream in(*s.file, std::ios::binary);
    if (!in) return Status::invalid_argument("--api-key-file: cannot read '%s'", s.file->c_str());
    std::string line;
    std::getline(in, line);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
      line.pop_back();
    }
    return checked(std::move(line), "--api-key-file");
  }
  if (s.env) return checked(*s.env, "DS4_API_KEY");
  return std::string();
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

}  // namespace ds4::server
