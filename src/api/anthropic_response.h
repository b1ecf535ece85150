// src/api/anthropic_response.h: serve events -> Anthropic Messages responses (features.md §1.11,
// §1.12, spec/clients.md "Claude Code").
// Owns: the message object (thinking / text / tool_use content blocks, stop_reason, stop_sequence,
// usage with cache_read_input_tokens), the stream's event sequence (message_start with the real
// input token count, content_block_start / _delta / _stop for thinking (closed by a non-empty
// signature_delta), text and tool_use (input_json_delta as the DSML arguments arrive),
// message_delta, message_stop, ping keepalives, `event: error` for a late failure), and the
// toolu_ ids (the same hex as the call ids the replay map keys).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "api/openai_response.h"
#include "api/protocol.h"

namespace ds4::api {

// "end_turn", "max_tokens", "stop_sequence", "tool_use".
const char* anthropic_stop_reason(const serve::Event& done);

class MessagesCollector final : public Collector {
 public:
  explicit MessagesCollector(ResponseMeta meta) : meta_(std::move(meta)) {}
  void add(const serve::Event& e) override;
  bool done() const override { return done_; }
  int status() const override;
  std::string body() const override;

 private:
  struct Call {
    std::string id, name, arguments;
  };
  ResponseMeta meta_;
  std::string content_, reasoning_;
  std::vector<Call> calls_;
  serve::Event done_event_;
  bool done_ = false;
};

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
