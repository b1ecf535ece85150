// apps/common/interrupt.h: Ctrl+C for the programs that stop work in progress on it (ds4's reply,
// ds4-eval's running case) instead of exiting.
// Owns: the one process-wide flag a SIGINT handler may set (a lock-free atomic, async-signal-safe)
// and installing that handler (no SA_RESTART: a blocked read returns, so a REPL can re-prompt).
// Does not own: what a program does once the flag is set, or clearing it.
#pragma once

#include <atomic>

namespace ds4::app {

std::atomic<bool>& interrupt_flag();
void install_interrupt_handler();

}  // namespace ds4::app
