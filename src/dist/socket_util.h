// src/dist/socket_util.h: the few things the coordinator's and the workers' ZeroMQ loops share:
// their clock, how long one poll waits before a loop looks at its stop flag and timers again, and
// a received message's bytes as the span the wire decoder takes.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <zmq.hpp>

namespace ds4::dist {

using Clock = std::chrono::steady_clock;
inline constexpr auto kPollSlice = std::chrono::milliseconds(50);

inline std::span<const uint8_t> bytes_of(const zmq::message_t& m) {
  return {static_cast<const uint8_t*>(m.data()), m.size()};
}

}  // namespace ds4::dist
