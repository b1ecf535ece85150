// apps/common/interrupt.cpp: see interrupt.h.
#include "apps/common/interrupt.h"

#include <csignal>

namespace ds4::app {

std::atomic<bool>& interrupt_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = [](int) { interrupt_flag().store(true); };
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART
  sigaction(SIGINT, &sa, nullptr);
}

}  // namespace ds4::app
