// Writes a few small valid safetensors files into a directory, as the fuzzer's starting corpus.
#include <cstdio>
#include <string>
#include <vector>

#include "tools/convert/safetensors_writer.h"

using ds4::convert::Dtype;
using ds4::convert::TensorData;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: safetensors_fuzz_seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  const std::vector<TensorData> a = {
      {"model.norm.weight", Dtype::kF32, {4}, std::vector<uint8_t>(16, 1)},
      {"model.layers.0.mlp.gate.tid2eid", Dtype::kI64, {2, 2}, std::vector<uint8_t>(32, 0)},
  };
  const std::vector<TensorData> b = {
      {"layers.0.attn.wq_a.weight", Dtype::kF8E4M3, {2, 4}, std::vector<uint8_t>(8, 0x38)},
      {"layers.0.attn.wq_a.scale", Dtype::kF8E8M0, {1, 1}, std::vector<uint8_t>(1, 127)},
      {"embed.weight", Dtype::kBF16, {2, 2}, std::vector<uint8_t>(8, 0x3f)},
  };
  const bool ok =
      ds4::convert::write_safetensors(dir + "/hf.safetensors", a, {{"format", "pt"}}).is_ok() &&
      ds4::convert::write_safetensors(dir + "/official.safetensors", b).is_ok();
  return ok ? 0 : 1;
}
