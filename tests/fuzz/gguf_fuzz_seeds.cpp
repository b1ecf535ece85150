// Writes a few small valid GGUF files into a directory, as the fuzzer's starting corpus.
#include <cstdio>
#include <string>
#include <vector>

#include "gguf/writer.h"

using namespace ds4::gguf;

static bool write_seed(const std::string& path, uint32_t alignment, int variant) {
  auto w = Writer::create(path, alignment);
  if (!w) return false;
  (void)w->add_metadata("general.architecture", Value::string("deepseek4"));
  (void)w->add_metadata("deepseek4.block_count", Value::u32(43));
  (void)w->add_metadata("deepseek4.rope.freq_base", Value::f32(10000.0f));
  (void)w->add_metadata("deepseek4.expert_weights_norm", Value::boolean(true));
  (void)w->add_metadata("deepseek4.attention.compress_ratios",
                        Value::u32_array(std::vector<uint32_t>{0, 0, 4, 128}));
  (void)w->add_metadata("tokenizer.ggml.tokens", Value::string_array({"a", "b", "<｜User｜>"}));
  (void)w->add_metadata(
      "x.nested",
      Value::nested_array(ValueType::kArray, {Value::array(ValueType::kI8, {Value::i8(-1)})}));
  if (variant > 0) (void)w->add_metadata("x.i64", Value::i64(-1));
  (void)w->add_tensor("a", GgufType::kF32, {4});
  (void)w->add_tensor("b", variant == 0 ? GgufType::kQ8_0 : GgufType::kQ2_K,
                      {variant == 0 ? 32u : 256u, 2});
  if (!w->write_header().is_ok()) return false;
  for (size_t i = 0; i < w->tensor_count(); ++i) {
    std::vector<uint8_t> data(w->tensor_bytes(i), static_cast<uint8_t>(i + 1));
    if (!w->write_tensor_data(i, data).is_ok()) return false;
  }
  return w->finish().is_ok();
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gguf_fuzz_seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  const bool ok = write_seed(dir + "/seed0.gguf", 32, 0) && write_seed(dir + "/seed1.gguf", 64, 1);
  return ok ? 0 : 1;
}
