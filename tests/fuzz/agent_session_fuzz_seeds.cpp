// Writes valid ds4-agent session files into DIR as the agent_session_fuzz corpus: a conversation
// with a payload (its DSV4 header declaring the token count), a stripped one, the system-prompt
// checkpoint, and a bare record as text.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "agent/session_file.h"
#include "kv/snapshot.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: agent_session_fuzz_seeds DIR\n");
    return 2;
  }
  using ds4::agent::SessionRecord;
  const uint32_t fields[13] = {ds4::kv::kSnapshotMagic,
                               ds4::kv::kSnapshotVersion,
                               4096,
                               32,
                               128,
                               128,
                               1026,
                               12,
                               6,
                               512,
                               128,
                               129280,
                               12};
  std::vector<uint8_t> payload(sizeof fields + 16, 0);
  std::memcpy(payload.data(), fields, sizeof fields);
  ds4::kv::KvcHeader h{.reason = ds4::kv::SaveReason::kAgentSession,
                       .tokens = 12,
                       .n_ctx = 4096,
                       .created = 1764576000,
                       .last_used = 1764576100};
  SessionRecord r{.title = "fix the parser",
                  .created = 1764576000,
                  .model = "deepseek-v4-flash q2",
                  .transcript_tokens = 12,
                  .transcript = std::string("<｜begin▁of▁sentence｜>hi\n\0x", 31)};
  std::vector<std::vector<uint8_t>> seeds = {*ds4::agent::encode_session_file(h, r, payload),
                                             *ds4::agent::encode_session_file(h, r, {})};
  h.reason = ds4::kv::SaveReason::kAgentSystem;
  r.title = "";
  seeds.push_back(*ds4::agent::encode_session_file(h, r, payload));
  const std::string text = *ds4::agent::encode_session_record(r);
  seeds.emplace_back(text.begin(), text.end());
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::ofstream f(std::string(argv[1]) + "/seed" + std::to_string(i) + ".kv", std::ios::binary);
    f.write(reinterpret_cast<const char*>(seeds[i].data()),
            static_cast<std::streamsize>(seeds[i].size()));
  }
  return 0;
}
