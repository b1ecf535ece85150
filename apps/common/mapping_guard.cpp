// apps/common/mapping_guard.cpp: the SIGBUS handler (async-signal-safe: write(2) and _exit(2)).
#include "apps/common/mapping_guard.h"

#include <signal.h>
#include <unistd.h>

#include <cstring>

namespace ds4::app {
namespace {

constexpr char kMessage[] =
    "ds4: fatal: SIGBUS reading a memory-mapped file: the model file was truncated, replaced or "
    "became unreadable while in use; exiting\n";
constexpr int kExitStatus = 70;  // EX_SOFTWARE

void on_sigbus(int) {
  // A failed write changes nothing: the process ends either way.
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
  ::_exit(kExitStatus);
}

}  // namespace

void install_mapping_guard() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigbus;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, nullptr);
}

}  // namespace ds4::app
