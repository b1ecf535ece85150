// tools/convert/tokenizer_keys.h: the tokenizer.* GGUF metadata of a converted model, taken from a
// vocabulary GGUF or built from a Hugging Face tokenizer.json (model.md §2.2, chat-format.md).
// Owns: the tokenizer.json -> tokenizer.ggml.* mapping, including V4's specials above V3's ids and
//   the placeholder names of unassigned ids.
// Does not own: tokenisation itself (src/tokenizer) or the rest of the metadata (model/hparams.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ds4/status.h"
#include "gguf/value.h"

namespace ds4::convert {

using MetadataList = std::vector<std::pair<std::string, gguf::Value>>;

// Every tokenizer.* key of an existing GGUF (e.g. one written by `ds4-gguf vocab`). Errors when it
// has no tokenizer.ggml.tokens, or when their count differs from n_vocab.
Result<MetadataList> tokenizer_metadata_from_gguf(const std::string& path, int n_vocab);

// tokenizer.ggml.{model, pre, tokens, token_type, merges, bos_token_id, eos_token_id} from a BPE
// tokenizer.json: vocab and added_tokens placed at their ids, the known V4 specials filled where
// the file leaves them out, every other id a `<｜place▁holder▁no▁N｜>` (N = id - 128000). Token
// strings must be unique; ids must lie below n_vocab.
Result<MetadataList> tokenizer_metadata_from_json(const std::string& path, int n_vocab);

}  // namespace ds4::convert
