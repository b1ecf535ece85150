// Writes seed inputs for dist_wire_fuzz into the directory given: one message of each type,
// hidden states in f32 and f16, an ACK, logits and an error.
#include <cstdio>
#include <string>
#include <vector>

#include "dist/wire.h"

namespace {

void put(const std::string& dir, const char* name, const std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen((dir + "/" + name).c_str(), "wb");
  if (f == nullptr) return;
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: dist_wire_fuzz_seeds DIR\n");
    return 2;
  }
  using namespace ds4::dist;
  const std::string dir = argv[1];
  put(dir, "hello",
      encode(Hello{.build = "b",
                   .fingerprint = "f",
                   .shape = "tiny",
                   .n_layer = 4,
                   .n_vocab = 100,
                   .hidden_width = 8,
                   .expert_bits = 2,
                   .layer_first = 2,
                   .layer_last = 3,
                   .output = true,
                   .ctx = 512,
                   .data_endpoint = "tcp://127.0.0.1:7001",
                   .incarnation = 5}));
  for (HiddenBits bits : {HiddenBits::kF32, HiddenBits::kF16}) {
    Work w{.session = 1,
           .request = 2,
           .flags = kWorkReset,
           .route = {{.endpoint = "tcp://127.0.0.1:7001", .layer_first = 1, .layer_last = 2},
                     {.endpoint = "tcp://127.0.0.1:7002",
                      .layer_first = 3,
                      .layer_last = 3,
                      .output = true}},
           .bits = bits,
           .hidden_width = 4,
           .tokens = {5, 6},
           .hidden = {1, 2, 3, 4, 5, 6, 7, 8}};
    w.prefix_hash = kPrefixHashBasis;
    w.result_hash = extend_prefix_hash(w.prefix_hash, w.tokens);
    put(dir, bits == HiddenBits::kF32 ? "work32" : "work16", encode(w));
  }
  put(dir, "ack", encode(WorkResult{.request = 3}));
  put(dir, "logits",
      encode(
          WorkResult{.request = 3, .kind = ResultKind::kLogits, .width = 3, .values = {1, 2, 3}}));
  put(dir, "error",
      encode(ErrorInfo{.session = 1, .request = 2, .text = "worker KV prefix hash mismatch"}));
  put(dir, "accept", encode_beat(MessageType::kAccept, 9));
  put(dir, "beat", encode_beat(MessageType::kBeat, 9));
  put(dir, "release", encode_release(1));
  const Hop hop{
      .endpoint = "tcp://127.0.0.1:7002", .layer_first = 3, .layer_last = 3, .output = true};
  put(dir, "state_save",
      encode(StateMsg{.session = 1, .request = 4, .prefix_hash = 9, .n_tokens = 2, .hop = hop},
             MessageType::kStateSave));
  put(dir, "state",
      encode(StateMsg{.session = 1, .request = 4, .n_tokens = 2, .shard = {1, 2, 3}},
             MessageType::kState));
  put(dir, "state_load",
      encode(StateMsg{.session = 1, .request = 5, .hop = hop, .tokens = {5, 6}, .shard = {7, 8}},
             MessageType::kStateLoad));
  return 0;
}
