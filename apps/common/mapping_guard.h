// apps/common/mapping_guard.h: a clear end instead of a silent crash when a memory-mapped file
// (the model) is truncated or becomes unreadable under a running program: the kernel then
// delivers SIGBUS on the next read of a page that no longer exists.
// Owns: the SIGBUS handler, which writes one line to stderr and exits with status 70.
#pragma once

namespace ds4::app {

// Installs the handler; call once at startup, before the model is mapped.
void install_mapping_guard();

}  // namespace ds4::app
