// src/chat/prompt_text.h: a prompt as the renderers build it -- the text, and the byte ranges of
// client text in it (system, user and tool-result content, tool schemas, response formats), so
// that special-token strings a client wrote stay text when the prompt is tokenized
// (Tokenizer::encode_rendered). Template text (tags, markers, the tools block's wording) and the
// model's own replayed output (assistant reasoning, content, tool calls) are not client text.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ds4/chat.h"

namespace ds4::chat {

class PromptText {
 public:
  explicit PromptText(std::string_view start) : out_{std::string(start), {}} {}

  // Template text, or the model's own output.
  PromptText& operator+=(std::string_view s) {
    out_.text += s;
    return *this;
  }
  // Client text.
  void client(std::string_view s) {
    if (s.empty()) return;
    const size_t begin = out_.text.size();
    out_.text += s;
    if (!out_.plain.empty() && out_.plain.back().end == begin) {
      out_.plain.back().end = out_.text.size();  // adjacent client text: one range
    } else {
      out_.plain.push_back({begin, out_.text.size()});
    }
  }
  bool empty() const { return out_.text.empty(); }

  RenderedPrompt take() && { return std::move(out_); }

 private:
  RenderedPrompt out_;
};

// The two renderers with their client-text ranges (template.cpp, ds4_template.cpp); render(),
// render_ds4_server() and render_prompt() are built on them.
Result<RenderedPrompt> render_official(std::span<const Message> messages,
                                       const RenderOptions& options);
Result<RenderedPrompt> render_ds4(std::span<const Message> messages, const RenderOptions& options);

}  // namespace ds4::chat
