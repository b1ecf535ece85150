// src/serve/request.cpp: tokens of a rendered prompt's continuation.
#include "serve/request.h"

namespace ds4::serve {

void append_rendered_tokens(const Tokenizer& tok, const Request& r, size_t from,
                            std::vector<TokenId>* out) {
  std::vector<TextRange> plain;
  for (const TextRange& t : r.plain) {
    if (t.end <= from) continue;
    plain.push_back({t.begin > from ? t.begin - from : 0, t.end - from});
  }
  tok.encode_rendered(std::string_view(r.rendered).substr(from), plain, out);
}

}  // namespace ds4::serve
