// tests/model/model_test_util.cpp
#include "model_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/factory.h"

namespace ds4::test {

std::string model_path(const std::string& name) {
  return std::string(DS4_TEST_MODELS_DIR) + "/" + name + ".gguf";
}

std::unique_ptr<Engine> open_model(const std::string& name, bool hf_mode, int threads) {
  EngineOptions o;
  o.model_path = model_path(name);
  o.threads = threads;
  o.qat_simulation = !hf_mode;
  o.f16_kv_rows = !hf_mode;
  auto e = Engine::open(o);
  EXPECT_TRUE(e.is_ok()) << e.status().message();
  return e.is_ok() ? std::move(e).value() : nullptr;
}

bool cuda_available() {
  // Without cuBLAS: only whether a backend can be made matters here.
  static const bool available =
      backend::make_backend(backend::BackendKind::kCuda, {.cuda_blas = false}).is_ok();
  return available;
}

std::unique_ptr<Engine> open_cuda_model(const std::string& name, bool hf_mode, bool cuda_blas) {
  EngineOptions o;
  o.model_path = model_path(name);
  o.backend = BackendKind::kCuda;
  o.qat_simulation = !hf_mode;
  o.f16_kv_rows = !hf_mode;
  o.cuda_blas = cuda_blas;
  auto e = Engine::open(o);
  EXPECT_TRUE(e.is_ok()) << e.status().message();
  return e.is_ok() ? std::move(e).value() : nullptr;
}

std::vector<RefCase> load_reference(const std::string& shape) {
  const char* src = std::getenv("DS4_SOURCE_DIR");
  const std::string dir = std::string(src != nullptr ? src : ".") + "/tests/data/reference/";
  std::ifstream jf(dir + shape + ".json");
  EXPECT_TRUE(jf.good()) << "missing " << dir + shape + ".json";
  const nlohmann::json j = nlohmann::json::parse(jf);
  const int n_vocab = 129280;
  std::ifstream lf(dir + shape + ".logits.f32", std::ios::binary);
  std::vector<RefCase> out;
  for (const auto& c : j["cases"]) {
    RefCase r;
    r.tokens = c["tokens"].get<std::vector<TokenId>>();
    r.continuation = c["continuation_without_cache"].get<std::vector<TokenId>>();
    r.topk_ids = c["topk_ids"].get<std::vector<std::vector<TokenId>>>();
    r.topk_logits = c["topk_logits"].get<std::vector<std::vector<float>>>();
    r.last_logits.resize(n_vocab);
    lf.read(reinterpret_cast<char*>(r.last_logits.data()), n_vocab * sizeof(float));
    EXPECT_TRUE(lf.good());
    out.push_back(std::move(r));
  }
  return out;
}

const float* f32_row(const gguf::Reader& f, const std::string& name, int64_t e, int64_t r) {
  const gguf::TensorInfo* t = f.find_tensor(name);
  EXPECT_NE(t, nullptr) << name;
  if (t == nullptr) return nullptr;
  EXPECT_EQ(t->type, gguf::GgufType::kF32) << name;
  const int64_t cols = static_cast<int64_t>(t->dims[0]), rows = static_cast<int64_t>(t->dims[1]);
  return reinterpret_cast<const float*>(f.tensor_data(*t).data()) + (e * rows + r) * cols;
}

double rel_l2(std::span<const float> got, std::span<const float> want) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = double(got[i]) - double(want[i]);
    num += d * d;
    den += double(want[i]) * double(want[i]);
  }
  return std::sqrt(num / den);
}

std::vector<TokenId> test_prompt(int n, uint32_t seed) {
  std::vector<TokenId> t{0};
  uint32_t x = seed;
  while (static_cast<int>(t.size()) < n) {
    x = x * 1664525u + 1013904223u;
    t.push_back(static_cast<TokenId>(1000 + (x >> 8) % 99000));
  }
  return t;
}

TokenId argmax_of(std::span<const float> logits) {
  TokenId best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = static_cast<TokenId>(i);
  }
  return best;
}

}  // namespace ds4::test
