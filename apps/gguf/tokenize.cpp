// apps/gguf/tokenize.cpp: `ds4-gguf tokenize FILE.gguf [--chat none|high|max] [--ids|--pieces]`.
// Reads standard input; prints one token per line ("ID" or "ID<TAB>PIECE").
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include "apps/gguf/commands.h"
#include "ds4/tokenizer.h"

namespace ds4::apps::gguf_tool {

int run_tokenize(const TokenizeOptions& opts) {
  auto tok = Tokenizer::open(opts.path);
  if (!tok) {
    std::fprintf(stderr, "ds4-gguf tokenize: %s\n", tok.status().to_string().c_str());
    return 1;
  }
  const std::string input((std::istreambuf_iterator<char>(std::cin)),
                          std::istreambuf_iterator<char>());
  std::string text = input;
  SpecialTokens specials = opts.text_only ? SpecialTokens::kAsText : SpecialTokens::kRecognize;
  if (!opts.chat.empty()) {
    auto rendered = render_user_turn(input, opts.chat);
    if (!rendered) {
      std::fprintf(stderr, "ds4-gguf tokenize: %s\n", rendered.status().to_string().c_str());
      return 1;
    }
    text = std::move(rendered).value();
    specials = SpecialTokens::kRecognize;
  }
  const std::vector<TokenId> ids = tok->encode(text, specials);
  std::string out;
  for (TokenId id : ids) {
    out += std::to_string(id);
    if (opts.pieces) {
      out += '\t';
      out += tok->piece(id);
    }
    out += '\n';
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fprintf(stderr, "%zu tokens\n", ids.size());
  return 0;
}

}  // namespace ds4::apps::gguf_tool
