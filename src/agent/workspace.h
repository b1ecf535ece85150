// src/agent/workspace.h: the directory the agent works in, and how tool paths map onto it.
// Owns: turning a path the model wrote (relative or absolute) into one the operating system
// opens, and deciding whether a write or edit target lies outside the working directory (the
// agent asks the user before such writes).
// Does not own: the approval itself (the agent loop) or any file access (file_io.h).
//
// The working directory is held here rather than taken from the process (no chdir, no global
// state), so two agents, or a test beside the real one, never see each other's directory.
#pragma once

#include <string>
#include <string_view>

namespace ds4::agent {

class Workspace {
 public:
  // `workdir` is absolute, or relative to the process's directory at construction. It is
  // canonicalized once (symlinks resolved) when it exists.
  explicit Workspace(std::string_view workdir);

  const std::string& workdir() const { return workdir_; }

  // The path the operating system should open: absolute paths as written, relative ones joined
  // to the working directory. `..` and symlinks are left for the kernel to resolve, so a path
  // means what it would mean to a shell started in the working directory.
  std::string resolve(std::string_view path) const;

  // True when `path`, with `..` and the symlinks of its existing leading part resolved (the
  // target itself too when it exists), does not lie at or below the working directory. A path
  // that cannot be resolved counts as outside: the cautious answer asks the user.
  bool outside_workdir(std::string_view path) const;

 private:
  std::string workdir_;
};

}  // namespace ds4::agent
