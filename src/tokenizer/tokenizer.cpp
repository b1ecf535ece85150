// src/tokenizer/tokenizer.cpp: the public Tokenizer -- special-token recognition around the
// pre-tokenizer + BPE pipeline, decoding, and loading from a GGUF file.
#include "ds4/tokenizer.h"

#include <algorithm>
#include <cstring>

#include "gguf/reader.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/vocab.h"

namespace ds4 {

struct Tokenizer::Impl {
  tokenizer::Vocab vocab;
  tokenizer::BpeEncoder bpe{vocab};
  size_t max_token_bytes = 1;

  void encode_text(std::string_view text, std::vector<TokenId>* out) const {
    std::vector<std::string_view> pieces;
    tokenizer::pretokenize(text, &pieces);
    for (std::string_view p : pieces) bpe.encode_piece(p, out);
  }

  // Length of the longest special token that starts at text[i], and its id.
  size_t match_special(std::string_view text, size_t i, TokenId* id) const {
    for (TokenId cand : vocab.specials_by_first_byte[static_cast<uint8_t>(text[i])]) {
      const std::string& s = vocab.tokens[static_cast<size_t>(cand)];
      if (s.size() <= text.size() - i && std::memcmp(text.data() + i, s.data(), s.size()) == 0) {
        *id = cand;
        return s.size();
      }
    }
    return 0;
  }
};

class TokenizerLoader {
 public:
  static Result<Tokenizer> load(const gguf::Reader& file) {
    auto impl = std::make_unique<Tokenizer::Impl>();
    DS4_TRY(tokenizer::load_vocab(file, &impl->vocab));
    for (const std::string& b : impl->vocab.bytes) {
      impl->max_token_bytes = std::max(impl->max_token_bytes, b.size());
    }
    return Tokenizer(std::move(impl));
  }
};

Result<Tokenizer> Tokenizer::open(const std::string& gguf_path) {
  auto file = gguf::Reader::open(gguf_path);
  if (!file) return file.status();
  auto tok = TokenizerLoader::load(*file);
  if (!tok) return tok.status().with_context(gguf_path);
  return tok;
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

void Tokenizer::encode_append(std::string_view text, SpecialTokens specials,
                              std::vector<TokenId>* out) const {
  if (specials == SpecialTokens::kAsText) {
    impl_->encode_text(text, out);
    return;
  }
  encode_rendered(text, {}, out);
}

void Tokenizer::encode_rendered(std::string_view text, std::span<const TextRange> plain,
                                std::vector<TokenId>* out) const {
  size_t span_start = 0;
  size_t r = 0;  // the first plain range that does not end before i
  for (size_t i = 0; i < text.size();) {
    while (r < plain.size() && plain[r].end <= i) ++r;
    const bool in_plain = r < plain.size() && plain[r].begin <= i;
    if (in_plain) {  // no special token starts inside client text
      i = plain[r].end;
      continue;
    }
    TokenId id = -1;
    size_t len = impl_->match_special(text, i, &id);
    // ... nor reaches into it.
    if (len != 0 && r < plain.size() && i + len > plain[r].begin) len = 0;
    if (len == 0) {
      ++i;
      continue;
    }
    impl_->encode_text(text.substr(span_start, i - span_start), out);
    out->push_back(id);
    i += len;
    span_start = i;
  }
  impl_->encode_text(text.substr(span_start), out);
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, SpecialTokens specials) const {
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 4);
  encode_append(text, specials, &out);
  return out;
}

std::string_view Tokenizer::token_bytes(TokenId id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return impl_->vocab.bytes[static_cast<size_t>(id)];
}

std::string Tokenizer::decode(std::span<const TokenId> ids) const {
  std::string out;
  for (TokenId id : ids) out += token_bytes(id);
  return out;
}

std::string_view Tokenizer::piece(TokenId id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return impl_->vocab.tokens[static_cast<size_t>(id)];
}

std::optional<TokenId> Tokenizer::find(std::string_view vocab_string) const {
  const auto it = impl_->vocab.by_string.find(vocab_string);
  if (it == impl_->vocab.by_string.end()) return std::nullopt;
  return it->second;
}

bool Tokenizer::is_special(TokenId id) const {
  return id >= 0 && id < vocab_size() && impl_->vocab.special[static_cast<size_t>(id)];
}

size_t Tokenizer::max_token_bytes() const { return impl_->max_token_bytes; }

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->vocab.tokens.size()); }
const SpecialIds& Tokenizer::special_ids() const { return impl_->vocab.ids; }

}  // namespace ds4
