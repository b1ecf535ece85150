// apps/cli/dumps.cpp: --dump-tokens, --dump-logprobs, --dump-logits (features.md §4.4-4.5) and
// the JSON string escaping of raw token bytes they share.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "base/utf8.h"
#include "cli.h"

namespace ds4::cli {
namespace {

std::string token_json(const Tokenizer& tok, TokenId id) {
  const std::string_view b = tok.token_bytes(id);
  std::string s =
      "{\"id\":" + std::to_string(id) + ",\"text\":" + json_bytes_string(b) + ",\"bytes\":[";
  for (size_t i = 0; i < b.size(); ++i) {
    s += (i ? "," : "") + std::to_string(static_cast<unsigned char>(b[i]));
  }
  return s + "]}";
}

std::string number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

Status write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) return Status::io_error("cannot write '%s'", path.c_str());
  return Status::ok();
}

}  // namespace

std::string json_bytes_string(std::string_view b) {
  std::string out = "\"";
  for (size_t i = 0; i < b.size();) {
    const auto c = static_cast<unsigned char>(b[i]);
    uint32_t cp = 0;
    const size_t n = c >= 0x80 ? base::decode_utf8(b, i, &cp) : 1;
    if (c >= 0x80 && n > 0) {  // a whole valid character: copy it
      out.append(b.substr(i, n));
      i += n;
      continue;
    }
    char esc[8];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c >= 0x80) {  // control characters and stray bytes
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  return out + "\"";
}

int dump_tokens(const Tokenizer& tok, const std::string& text) {
  const std::vector<TokenId> ids = tok.encode(text, SpecialTokens::kRecognize);
  std::printf("[");
  for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? ", " : "", ids[i]);
  std::printf("]\n");
  for (TokenId id : ids) {
    const std::string s = json_bytes_string(tok.token_bytes(id));
    std::printf("%6d  %s\n", id, s.substr(1, s.size() - 2).c_str());
  }
  return 0;
}

Status dump_logprobs(Engine& e, Session& s, const Tokenizer& tok, std::span<const TokenId> prompt,
                     const CliOptions& o) {
  (void)e;
  DS4_TRY(s.sync(prompt).status());
  const int k = std::clamp(o.logprobs_top_k, 1, 128);
  const int steps = std::max(0, std::min(o.n_predict, s.n_ctx() - s.n_tokens() - 1));
  std::string j = "{\"source\":\"ds4\",\"prompt_tokens\":" + std::to_string(prompt.size()) +
                  ",\"ctx\":" + std::to_string(s.n_ctx()) + ",\"top_k\":" + std::to_string(k) +
                  ",\"steps\":[";
  for (int step = 0; step < steps; ++step) {
    const TokenId sel = argmax(s.logits());
    j += std::string(step ? ",\n" : "\n") + "{\"step\":" + std::to_string(step) +
         ",\"selected\":" + token_json(tok, sel) + ",\"top_logprobs\":[";
    const auto top = s.top_logprobs(k);
    for (size_t i = 0; i < top.size(); ++i) {
      j += std::string(i ? "," : "") + "{\"token\":" + token_json(tok, top[i].id) +
           ",\"logit\":" + number(s.logits()[top[i].id]) +
           ",\"logprob\":" + number(top[i].logprob) + "}";
    }
    j += "]}";
    if (sel == tok.special_ids().eos) break;
    DS4_TRY(s.eval(sel));
  }
  return write_file(o.dump_logprobs, j + "\n]}\n");
}

Status dump_logits(Engine& e, Session& s, const Tokenizer& tok, std::span<const TokenId> prompt,
                   const CliOptions& o) {
  DS4_TRY(s.sync(prompt).status());
  const auto logits = s.logits();
  const TokenId best = argmax(logits);
  std::string j =
      "{\"source\":\"ds4\",\"model\":" + json_bytes_string(o.run.model) + ",\"backend\":\"" +
      o.run.backend + "\",\"quant_bits\":" + std::to_string(e.info().expert_bits) +
      ",\"prompt_tokens\":" + std::to_string(prompt.size()) +
      ",\"ctx\":" + std::to_string(s.n_ctx()) + ",\"vocab\":" + std::to_string(logits.size()) +
      ",\"argmax_token\":" + token_json(tok, best) + ",\"argmax_logit\":" + number(logits[best]) +
      ",\"logits\":[";
  for (size_t i = 0; i < logits.size(); ++i) {
    j += (i == 0 ? "\n" : i % 8 == 0 ? ",\n" : ",") + number(logits[i]);
  }
  return write_file(o.dump_logits, j + "\n]}\n");
}

}  // namespace ds4::cli
