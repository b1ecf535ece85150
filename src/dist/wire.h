// src/dist/wire.h: the messages of distributed inference (features.md §10, issue 49) as bytes --
// our own layout, carried as ZeroMQ message bodies (control plane and CPU activations) -- and
// the token-prefix hash every work item carries.
// Owns: the frame (magic, version, type, body length), the records (HELLO: a worker's
// registration; ACCEPT: the coordinator's answer; BEAT: liveness, both ways; WORK: tokens and the
// hidden state for the next hop of a route; RESULT: an ack, a hidden state or logits; ERROR;
// RELEASE: a session the coordinator no longer needs), their limits, hidden-state encoding (f32 or
// IEEE f16), and the strict decoding the fuzzer runs: every length checked against what is left and
// against the limits, nothing allocated beyond the input's size, no trailing bytes. All integers
// little-endian. Does not own: sockets (the transport), routes (route.h), what a worker does with
// WORK.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ds4/status.h"

namespace ds4::dist {

inline constexpr uint32_t kWireMagic = 0x57345344;  // "DS4W"
inline constexpr uint16_t kWireVersion = 2;
inline constexpr size_t kFrameHeaderBytes = 12;  // magic u32, version u16, type u16, length u32

enum class MessageType : uint16_t {
  kHello = 1,
  kError = 2,
  kWork = 3,
  kResult = 4,
  kAccept = 5,
  kBeat = 6,
  kRelease = 7,
  kStateSave = 8,   // coordinator -> worker: send the state of your layers of a session
  kState = 9,       // worker -> coordinator: that state (a kv layer shard)
  kStateLoad = 10,  // coordinator -> worker: install this state; answered by an ACK RESULT
};

// Bounds a decoder enforces before it allocates (a peer's claims are never trusted).
struct WireLimits {
  uint32_t max_tokens = 65536;                  // tokens in one WORK
  uint32_t max_hidden_width = 1 << 16;          // floats per token of a hidden state
  uint64_t max_body_bytes = uint64_t{1} << 31;  // one message
  uint32_t max_text_bytes = 4096;               // names, commits, error messages
  uint32_t max_vocab = 1 << 20;                 // logits in a RESULT
  uint32_t max_hops = 64;                       // a route's length
  uint32_t max_session_tokens = 1 << 20;        // tokens of a session (a state load's transcript)
};

// FNV-1a 64 over each token id's 4 little-endian bytes (features.md §10.5): the hash of a token
// prefix, extended span by span. Every WORK carries the hash before and after its tokens. The
// basis is FNV-64's published offset basis 0xcbf29ce484222325 (features.md's figure lacks its last
// digit; our wire is our own, and the test holds it to FNV-1a's published vectors).
inline constexpr uint64_t kPrefixHashBasis = 0xcbf29ce484222325ull;
uint64_t extend_prefix_hash(uint64_t hash, std::span<const int32_t> tokens);

// A worker's registration.
struct Hello {
  std::string build;        // the commit both sides must share
  std::string fingerprint;  // ModelInfo::fingerprint of the model file
  std::string shape;        // "flash", "pro", or a test shape
  uint32_t n_layer = 0;
  uint32_t n_vocab = 0;
  uint32_t hidden_width = 0;
  uint32_t expert_bits = 0;
  uint32_t layer_first = 0;  // inclusive range
  uint32_t layer_last = 0;
  bool output = false;  // computes the logits (after the last layer)
  uint32_t ctx = 0;
  std::string data_endpoint;  // where WORK reaches the worker ("tcp://HOST:PORT")
  uint64_t incarnation = 0;   // drawn when the worker process starts: a restart is a new worker
  bool operator==(const Hello&) const = default;
};

// ACCEPT (coordinator -> worker) and BEAT (both ways, every interval) carry the sender's
// incarnation: a coordinator that restarted is one the worker must register with again.
struct Beat {
  uint64_t incarnation = 0;
  bool operator==(const Beat&) const = default;
};

// One hop of a route: a worker's data endpoint and the layers it computes there.
struct Hop {
  std::string endpoint;
  uint32_t layer_first = 0;
  uint32_t layer_last = 0;
  bool output = false;  // this hop computes the logits
  bool operator==(const Hop&) const = default;
};

// Hidden states on the wire: f32 as computed, or IEEE f16 (round to nearest even) at half the
// bytes (features.md §10.2 --dist-activation-bits 32 | 16).
enum class HiddenBits : uint8_t { kF32 = 32, kF16 = 16 };

inline constexpr uint32_t kWorkReset = 1u << 0;    // start the session's timeline at pos 0
inline constexpr uint32_t kWorkAckOnly = 1u << 1;  // a non-final prefill chunk: the end replies ACK
inline constexpr uint32_t kWorkKnownFlags = 0x3;

// A span for route[route_index]: each hop evaluates its layers and sends the item on to the next
// hop with its own hidden state; the last one answers the coordinator with a RESULT (or any hop
// with an ERROR). The route is contiguous, starts after layer 0's owner and only its last hop may
// own the head.
struct Work {
  uint64_t session = 0;
  uint64_t request = 0;
  uint64_t prefix_hash = 0;  // of the tokens before pos0
  uint64_t result_hash = 0;  // after appending `tokens`
  uint32_t pos0 = 0;
  uint32_t flags = 0;
  // The coordinator session's context size and prefill chunk (0: the worker's own): a reset item
  // makes the worker's session alike.
  uint32_t n_ctx = 0;
  uint32_t prefill_chunk = 0;
  std::vector<Hop> route;
  uint32_t route_index = 0;
  HiddenBits bits = HiddenBits::kF32;
  uint32_t hidden_width = 0;  // 0: no hidden state (the range starts at layer 0)
  std::vector<int32_t> tokens;
  std::vector<float> hidden;  // tokens.size() x hidden_width (decoded to f32)
  const Hop& hop() const { return route[route_index]; }
  bool operator==(const Work&) const = default;
};

enum class ResultKind : uint8_t { kAck = 0, kHidden = 1, kLogits = 2 };

struct WorkResult {
  uint64_t session = 0;
  uint64_t request = 0;
  uint64_t result_hash = 0;
  ResultKind kind = ResultKind::kAck;
  HiddenBits bits = HiddenBits::kF32;  // of a hidden state (logits are always f32)
  uint32_t width = 0;                  // floats per row: hidden_width, or n_vocab for logits
  std::vector<float> values;           // rows x width
  bool operator==(const WorkResult&) const = default;
};

// Distributed snapshots (features.md §10.9): one message per hop, the shard whole (the limit on
// a body bounds it).
struct StateMsg {
  uint64_t session = 0;
  uint64_t request = 0;
  uint64_t prefix_hash = 0;     // kStateSave: of the n_tokens the worker must hold
  uint32_t n_tokens = 0;        // kStateSave, kState
  uint32_t n_ctx = 0;           // kStateLoad: the session's settings, as in WORK
  uint32_t prefill_chunk = 0;   // kStateLoad
  Hop hop;                      // kStateSave, kStateLoad: the worker's layers
  std::vector<int32_t> tokens;  // kStateLoad: the session's transcript
  std::vector<uint8_t> shard;   // kState, kStateLoad: kv layer shard bytes
  bool operator==(const StateMsg&) const = default;
};

// A refusal: of a registration (session and request 0) or of one item.
struct ErrorInfo {
  uint64_t session = 0;
  uint64_t request = 0;
  std::string text;  // UTF-8
  bool operator==(const ErrorInfo&) const = default;
};

// One decoded message.
struct Message {
  MessageType type = MessageType::kError;
  Hello hello;
  Beat beat;  // kAccept, kBeat
  Work work;
  WorkResult result;
  ErrorInfo error;
  uint64_t release = 0;  // kRelease: the session (0: every session)
  StateMsg state;        // kStateSave, kState, kStateLoad
};

std::vector<uint8_t> encode(const Hello& m);
std::vector<uint8_t> encode(const Work& m);
std::vector<uint8_t> encode(const WorkResult& m);
std::vector<uint8_t> encode(const ErrorInfo& m);
std::vector<uint8_t> encode_beat(MessageType type, uint64_t incarnation);  // kAccept or kBeat
std::vector<uint8_t> encode_release(uint64_t session);
std::vector<uint8_t> encode(const StateMsg& m, MessageType type);  // one of the three kinds

// Decodes one whole message (frame and body). Errors name the field and the value that failed.
Result<Message> decode(std::span<const uint8_t> bytes, const WireLimits& limits = {});

}  // namespace ds4::dist
