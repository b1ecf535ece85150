// src/backend/factory.h: makes a backend of a given kind (design/architecture.md §5.4).
// Owns: the one place that knows every implementation (cpu/, cuda/), so that the seam
// (backend.h) depends on none of them. Only the engine links it (target ds4::backend_factory).
#pragma once

#include <memory>

#include "backend/backend.h"
#include "ds4/status.h"

namespace ds4::backend {

// The CPU backend always exists; CUDA returns unavailable when it is not compiled in or no
// device is present.
Result<std::unique_ptr<Backend>> make_backend(BackendKind kind, const BackendOptions& options);

}  // namespace ds4::backend
