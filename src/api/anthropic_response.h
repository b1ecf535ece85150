// src/api/anthropic_response.h: serve events -> Anthropic Messages responses (features.md §1.11,
// §1.12, spec/clients.md "Claude Code").
// Owns: the message object (thinking / text / tool_use content blocks, stop_reason, stop_sequence,
// usage with cache_read_input_tokens), the stream's event sequence (message_start with the real
// input token count, content_block_start / _delta / _stop for thinking (closed by a non-empty
// signature_delta), text and tool_use (input_json_delta as the DSML arguments arrive),
// message_delta, message_stop, ping keepalives, `event: error` for a late failure), and the
// toolu_ ids (the same hex as the call ids the replay map keys).
// Does not own: gathering the events of a non-streaming request (Collector, protocol.h).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "api/protocol.h"

namespace ds4::api {

// "end_turn", "max_tokens", "stop_sequence", "tool_use".
const char* anthropic_stop_reason(const serve::Event& done);

// Non-streaming: the message object (or Anthropic's error body) of a turn.
Collector messages_collector(ResponseMeta meta);

class MessagesStreamWriter final : public StreamWriter {
 public:
  explicit MessagesStreamWriter(ResponseMeta meta) : meta_(std::move(meta)) {}
  std::string start() override;
  std::string encode(const serve::Event& e) override;
  std::string keepalive() override;

 private:
  enum class Block { kNone, kThinking, kText, kToolUse };
  std::string open(Block kind, const nlohmann::json& block);
  std::string close();
  ResponseMeta meta_;
  Block open_ = Block::kNone;
  int index_ = -1;  // the open (or last) block's index
};

}  // namespace ds4::api
