// tools/imatrix/calibrate.cpp: the calibration run (see calibrate.h).
#include "tools/imatrix/calibrate.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/read_file.h"
#include "ds4/chat.h"
#include "gguf/reader.h"
#include "model/validate.h"
#include "tools/imatrix/imatrix.h"

namespace ds4::imatrix {
namespace {

Result<chat::Role> role_of(const std::string& r) {
  if (r == "system") return chat::Role::kSystem;
  if (r == "user") return chat::Role::kUser;
  if (r == "assistant") return chat::Role::kAssistant;
  return Status::invalid_argument("role '%s' (system, user or assistant)", r.c_str());
}

// One JSONL line's prompt text.
Result<std::string> chat_line(const std::string& line) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::invalid_argument("not a JSON object");
  std::vector<chat::Message> msgs;
  if (j.contains("prompt")) {
    if (!j["prompt"].is_string()) return Status::invalid_argument("\"prompt\" is not a string");
    msgs.push_back({.role = chat::Role::kUser, .content = j["prompt"].get<std::string>()});
  } else if (j.contains("messages") && j["messages"].is_array() && !j["messages"].empty()) {
    for (const auto& m : j["messages"]) {
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string() ||
          !m.contains("content") || !m["content"].is_string())
        return Status::invalid_argument("a message without string \"role\" and \"content\"");
      DS4_ASSIGN_OR_RETURN(const chat::Role role, role_of(m["role"].get<std::string>()));
      msgs.push_back({.role = role, .content = m["content"].get<std::string>()});
    }
  } else {
    return Status::invalid_argument("neither \"prompt\" nor a non-empty \"messages\" array");
  }
  return chat::render(msgs, chat::RenderOptions{});
}

// FNV-1a 64 over the chunks' token ids and lengths.
std::string digest(const std::vector<std::vector<TokenId>>& chunks) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto mix = [&h](uint64_t v) {
    for (int b = 0; b < 8; ++b) {
      h ^= (v >> (8 * b)) & 0xff;
      h *= 0x100000001b3ull;
    }
  };
  for (const auto& c : chunks) {
    mix(c.size());
    for (const TokenId t : c) mix(static_cast<uint64_t>(static_cast<uint32_t>(t)));
  }
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

Result<std::vector<std::vector<TokenId>>> read_corpus(const Tokenizer& tok,
                                                      const CalibrateOptions& o) {
  if (o.text_files.empty() && o.chat_files.empty())
    return Status::invalid_argument("no calibration input: give --text FILE or --chat FILE.jsonl");
  const size_t n = static_cast<size_t>(o.chunk_tokens);
  const TokenId bos = tok.special_ids().bos;
  std::vector<std::vector<TokenId>> chunks;
  for (const std::string& path : o.text_files) {
    DS4_ASSIGN_OR_RETURN(const std::string text, base::read_file(path));
    const std::vector<TokenId> ids = tok.encode(text, SpecialTokens::kAsText);
    for (size_t at = 0; at < ids.size(); at += n - 1) {
      std::vector<TokenId> c{bos};
      c.insert(c.end(), ids.begin() + static_cast<std::ptrdiff_t>(at),
               ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), at + n - 1)));
      chunks.push_back(std::move(c));
    }
  }
  for (const std::string& path : o.chat_files) {
    DS4_ASSIGN_OR_RETURN(const std::string text, base::read_file(path));
    std::istringstream in(text);
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      auto rendered = chat_line(line);
      if (!rendered.is_ok()) {
        return Status::invalid_argument("%s line %d: %s", path.c_str(), number,
                                        rendered.status().message().c_str());
      }
      std::vector<TokenId> ids = tok.encode(*rendered, SpecialTokens::kRecognize);
      if (ids.size() > n) ids.resize(n);
      chunks.push_back(std::move(ids));
    }
  }
  if (chunks.empty()) return Status::invalid_argument("the calibration input holds no text");
  return chunks;
}

Status calibrate(const CalibrateOptions& o, CalibrateReport* report) {
  if (o.chunk_tokens < 2 || o.save_every < 1 || o.max_chunks < 0)
    return Status::invalid_argument("--chunk must be at least 2 and --save-every at least 1");
  DS4_ASSIGN_OR_RETURN(const Tokenizer tok, Tokenizer::open(o.model));
  DS4_ASSIGN_OR_RETURN(const auto chunks, read_corpus(tok, o));
  Imatrix m;
  Collector collector(&m);
  EngineOptions eo;
  eo.model_path = o.model;
  eo.threads = o.threads;
  eo.backend = o.backend;
  eo.observer = &collector;
  DS4_ASSIGN_OR_RETURN(const auto engine, Engine::open(eo));
  const ModelInfo& info = engine->info();
  DS4_ASSIGN_OR_RETURN(const gguf::Reader file, gguf::Reader::open(o.model));
  const model::FileCheck check = model::check_model_file(file);
  const Dims dims = dims_of(check.shape);
  const std::string ds = digest(chunks);
  uint64_t resumed = 0;
  if (std::filesystem::exists(o.output)) {
    DS4_ASSIGN_OR_RETURN(m, read_imatrix(o.output));
    if (!(m.dims == dims) || m.fingerprint != info.fingerprint || m.dataset != ds ||
        m.chunk_tokens != o.chunk_tokens) {
      return Status::invalid_argument(
          "'%s' holds another model's or another corpus's importance matrix (or another --chunk): "
          "give another -o, or remove it to start again",
          o.output.c_str());
    }
    resumed = m.chunks;
  } else {
    m = Imatrix::empty(dims);
    m.fingerprint = info.fingerprint;
    m.dataset = ds;
    m.chunk_tokens = o.chunk_tokens;
  }
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t tokens = 0;
  const uint64_t stop =
      o.max_chunks > 0 ? std::min<uint64_t>(chunks.size(), o.max_chunks) : chunks.size();
  int since_save = 0;
  while (m.chunks < stop) {
    const auto& c = chunks[m.chunks];
    DS4_ASSIGN_OR_RETURN(auto s, engine->create_session({.n_ctx = static_cast<int>(c.size()) + 1,
                                                         .prefill_chunk = o.chunk_tokens}));
    DS4_TRY(s->append(c).status().with_context("chunk " + std::to_string(m.chunks)));
    tokens += c.size();
    ++m.chunks;
    if (o.progress) {
      std::fprintf(stderr, "imatrix: chunk %llu of %zu\n",
                   static_cast<unsigned long long>(m.chunks), chunks.size());
    }
    if (++since_save == o.save_every && m.chunks < stop) {
      DS4_TRY(write_imatrix(m, o.output));
      since_save = 0;
    }
  }
  DS4_TRY(write_imatrix(m, o.output));
  if (report != nullptr) {
    report->chunks_total = chunks.size();
    report->chunks_done = m.chunks;
    report->chunks_resumed = resumed;
    report->tokens = tokens;
    report->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return Status::ok();
}

}  // namespace ds4::imatrix
