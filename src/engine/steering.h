// src/engine/steering.h: directional steering's direction file and scales (features.md §8).
#pragma once

#include <string>

#include "ds4/session.h"
#include "engine/engine_impl.h"

namespace ds4 {

// Scales within range and finite; a non-zero one only with a direction file.
Status check_steering(const Steering& s, bool has_file);
// A session's scales: check_steering, and on an engine whose later layers run in other processes
// (a LayerTail) only the engine's own, which those processes were started with.
Status check_session_steering(const Engine::Impl& e, const Steering& s);
// Reads the direction file (n_layer x n_embd float32, exactly that size, finite) into the
// engine and binds one direction per layer (ModelWeights::steering).
Status load_steering(Engine::Impl& e, const std::string& path);

}  // namespace ds4
