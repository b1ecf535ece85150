// src/engine/pick.h: the draws of Engine::pick and Session::sample (one home for both): device
// picks where the backend makes them and the session's logits are there, host draws otherwise.
#pragma once

#include <span>

#include "ds4/engine.h"
#include "engine/session_impl.h"

namespace ds4 {

// entries[i] draws from sessions[i]'s logits (Engine::pick's contract).
void pick_tokens(Engine::Impl& e, std::span<const Session::Impl* const> sessions,
                 std::span<PickEntry> entries, const ParallelFor& parallel_for);

}  // namespace ds4
