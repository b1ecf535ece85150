// src/tokenizer/vocab.cpp: loading and validating the vocabulary and merges from GGUF metadata.
#include "tokenizer/vocab.h"

#include <algorithm>
#include <cinttypes>

namespace ds4::tokenizer {
namespace {

constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";
constexpr std::string_view kTypesKey = "tokenizer.ggml.token_type";

// Without token types (older files), the specials are the `<｜...｜>`-style tokens, the DSML
// marker and the think tags: every token whose text contains U+FF5C, plus <think> / </think>.
bool looks_special(std::string_view s) {
  return s.find("\xef\xbd\x9c") != std::string_view::npos || s == "<think>" || s == "</think>";
}

Result<const gguf::Value*> string_array(const gguf::Reader& file, std::string_view key) {
  const gguf::Value* v = file.find(key);
  if (v == nullptr)
    return Status::invalid_model("missing metadata key '%.*s'", int(key.size()), key.data());
  if (v->type() != gguf::ValueType::kArray || v->elem_type() != gguf::ValueType::kString) {
    return Status::invalid_model("metadata key '%.*s' must be an array of strings", int(key.size()),
                                 key.data());
  }
  return v;
}

Status load_types(const gguf::Reader& file, Vocab* vocab) {
  const size_t n = vocab->tokens.size();
  vocab->types.assign(n, TokenType::kNormal);
  const gguf::Value* v = file.find(kTypesKey);
  if (v == nullptr) {
    for (size_t i = 0; i < n; ++i) {
      if (looks_special(vocab->tokens[i])) vocab->types[i] = TokenType::kControl;
    }
    return Status::ok();
  }
  const auto types = v->as_i64_array();
  if (!types || types->size() != n) {
    return Status::invalid_model("'%.*s' must be an integer array with one entry per token (%zu)",
                                 int(kTypesKey.size()), kTypesKey.data(), n);
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t t = (*types)[i];
    if (t < 1 || t > 6) {
      return Status::invalid_model("token %zu has token type %" PRId64 " (must be 1..6)", i, t);
    }
    vocab->types[i] = static_cast<TokenType>(t);
  }
  return Status::ok();
}

Status load_merges(const gguf::Reader& file, Vocab* vocab) {
  DS4_ASSIGN_OR_RETURN(const gguf::Value* merges, string_array(file, kMergesKey));
  vocab->merges.reserve(merges->size());
  std::string joined;
  for (size_t rank = 0; rank < merges->items().size(); ++rank) {
    const std::string& m = merges->items()[rank].str();
    const size_t sp = m.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 >= m.size() ||
        m.find(' ', sp + 1) != std::string::npos) {
      return Status::invalid_model("merge %zu ('%s') is not two tokens separated by one space",
                                   rank, m.c_str());
    }
    const std::string_view left(m.data(), sp), right(m.data() + sp + 1, m.size() - sp - 1);
    joined.assign(left).append(right);
    const auto l = vocab->by_string.find(left);
    const auto r = vocab->by_string.find(right);
    const auto j = vocab->by_string.find(joined);
    if (l == vocab->by_string.end() || r == vocab->by_string.end() || j == vocab->by_string.end()) {
      return Status::invalid_model("merge %zu ('%s') names a token that is not in the vocabulary",
                                   rank, m.c_str());
    }
    // A pair listed twice keeps its first (lowest) rank.
    vocab->merges.insert(Vocab::pair_key(l->second, r->second),
                         Merge{static_cast<int32_t>(rank), j->second});
  }
  return Status::ok();
}

Status resolve_special_ids(Vocab* vocab) {
  struct Want {
    std::string_view text;
    TokenId* id;
  };
  SpecialIds& ids = vocab->ids;
  const Want wants[] = {
      {"<\xef\xbd\x9c"
       "begin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
       &ids.bos},
      {"<\xef\xbd\x9c"
       "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
       &ids.eos},
      {"<\xef\xbd\x9cUser\xef\xbd\x9c>", &ids.user},
      {"<\xef\xbd\x9c"
       "Assistant\xef\xbd\x9c>",
       &ids.assistant},
      {"<think>", &ids.think_start},
      {"</think>", &ids.think_end},
      {"\xef\xbd\x9c"
       "DSML\xef\xbd\x9c",
       &ids.dsml},
  };
  for (const Want& w : wants) {
    const auto it = vocab->by_string.find(w.text);
    if (it == vocab->by_string.end()) {
      return Status::invalid_model("vocabulary lacks the special token '%.*s'", int(w.text.size()),
                                   w.text.data());
    }
    *w.id = it->second;
    vocab->special[static_cast<size_t>(it->second)] = true;  // recognised even without token types
  }
  return Status::ok();
}

void index_specials(Vocab* vocab) {
  vocab->specials_by_first_byte.assign(256, {});
  for (size_t i = 0; i < vocab->tokens.size(); ++i) {
    if (!vocab->special[i] || vocab->tokens[i].empty()) continue;
    vocab->specials_by_first_byte[static_cast<uint8_t>(vocab->tokens[i][0])].push_back(
        static_cast<TokenId>(i));
  }
  for (auto& group : vocab->specials_by_first_byte) {
    std::stable_sort(group.begin(), group.end(), [&](TokenId a, TokenId b) {
      return vocab->tokens[static_cast<size_t>(a)].size() >
             vocab->tokens[static_cast<size_t>(b)].size();
    });
  }
}

}  // namespace

void MergeTable::reserve(size_t n) {
  size_t cap = 16;
  int bits = 4;
  while (cap < 2 * n) {
    cap <<= 1;
    ++bits;
  }
  keys_.assign(cap, kEmpty);
  values_.assign(cap, Merge{0, 0});
  mask_ = cap - 1;
  shift_ = 64 - bits;
  size_ = 0;
}

void MergeTable::insert(uint64_t key, Merge m) {
  if (2 * (size_ + 1) > keys_.size()) {  // keep the load factor at or below 1/2
    std::vector<uint64_t> old_keys = std::move(keys_);
    std::vector<Merge> old_values = std::move(values_);
    reserve(size_ + 1);
    for (size_t i = 0; i < old_keys.size(); ++i) {
      if (old_keys[i] != kEmpty) insert(old_keys[i], old_values[i]);
    }
  }
  size_t i = slot(key);
  while (keys_[i] != kEmpty) {
    if (keys_[i] == key) return;
    i = (i + 1) & mask_;
  }
  keys_[i] = key;
  values_[i] = m;
  ++size_;
}

Status load_vocab(const gguf::Reader& file, Vocab* vocab) {
  DS4_ASSIGN_OR_RETURN(const gguf::Value* tokens, string_array(file, kTokensKey));
  const size_t n = tokens->items().size();
  if (n < 256 || n > (size_t{1} << 30)) {
    return Status::invalid_model("'%.*s' has %zu entries (need 256 .. 2^30)",
                                 int(kTokensKey.size()), kTokensKey.data(), n);
  }
  vocab->tokens.reserve(n);
  for (const gguf::Value& t : tokens->items()) vocab->tokens.push_back(t.str());
  vocab->by_string.reserve(n);
  for (size_t i = 0; i < n; ++i)
    vocab->by_string.insert_or_assign(vocab->tokens[i], static_cast<TokenId>(i));
  DS4_TRY(load_types(file, vocab));
  vocab->special.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    vocab->special[i] =
        vocab->types[i] == TokenType::kControl || vocab->types[i] == TokenType::kUserDefined;
  }
  DS4_TRY(resolve_special_ids(vocab));
  vocab->bytes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    vocab->bytes[i] =
        vocab->special[i] ? vocab->tokens[i] : vocab->byte_level.decode(vocab->tokens[i]);
  }
  vocab->byte_token.assign(256, -1);
  for (int b = 0; b < 256; ++b) {
    std::string one;
    one.push_back(static_cast<char>(b));
    const auto it = vocab->by_string.find(vocab->byte_level.encode(one));
    if (it == vocab->by_string.end()) {
      return Status::invalid_model("vocabulary lacks the single-byte token for byte 0x%02x", b);
    }
    vocab->byte_token[static_cast<size_t>(b)] = it->second;
  }
  DS4_TRY(load_merges(file, vocab));
  index_specials(vocab);
  return Status::ok();
}

}  // namespace ds4::tokenizer
