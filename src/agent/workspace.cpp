// src/agent/workspace.cpp: path resolution against the agent's working directory.
#include "agent/workspace.h"

#include <filesystem>
#include <system_error>

namespace ds4::agent {
namespace fs = std::filesystem;

namespace {

// Drops the trailing separator of "a/b/" (lexically_normal keeps it) but never of "/".
std::string without_trailing_slash(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

Workspace::Workspace(std::string_view workdir) {
  std::error_code ec;
  fs::path p = fs::absolute(fs::path(workdir.empty() ? "." : workdir), ec);
  if (ec) p = fs::path(workdir);
  fs::path canonical = fs::canonical(p, ec);
  workdir_ = without_trailing_slash((ec ? p.lexically_normal() : canonical).string());
}

std::string Workspace::resolve(std::string_view path) const {
  if (path.empty()) return workdir_;
  if (path.front() == '/') return std::string(path);
  return workdir_ == "/" ? "/" + std::string(path) : workdir_ + "/" + std::string(path);
}

bool Workspace::outside_workdir(std::string_view path) const {
  std::error_code ec;
  // weakly_canonical: realpath of the longest existing leading part, the rest made lexically
  // normal. A missing file in a symlinked directory thus lands where the write would land.
  const fs::path real = fs::weakly_canonical(fs::path(resolve(path)), ec);
  if (ec) return true;
  const std::string target = without_trailing_slash(real.lexically_normal().string());
  if (workdir_ == "/") return false;
  if (target == workdir_) return false;
  return !(target.size() > workdir_.size() && target.compare(0, workdir_.size(), workdir_) == 0 &&
           target[workdir_.size()] == '/');
}

}  // namespace ds4::agent
