// tests/model/quantize_test.cpp: `ds4-gguf quantize` (tools/quantize, issue 53) on the tiny shape.
// The reference is the converter's path: the tiny model's Hugging Face checkpoint (the same seeded
// weights as tiny-f32.gguf) converted with --quant q2 / q4 / q8 encodes each expert row as it
// reads it. Quantizing the f32 file must give the converted file's routed experts byte for byte,
// keep every other tensor and metadata key of its input, pass the file check and load in the
// engine; bad inputs and arguments are refused with no file left behind.
#include "tools/quantize/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "ds4/sampling.h"
#include "gguf/reader.h"
#include "model/validate.h"
#include "model_test_util.h"
#include "temp_folder.h"
#include "tools/convert/convert.h"
#include "tools/imatrix/calibrate.h"
#include "tools/synth/hf_export.h"
#include "tools/synth/synth.h"

namespace ds4::test {
namespace {

namespace fs = std::filesystem;

class QuantizeTest : public ::testing::Test {
 protected:
  std::string out(const std::string& name) const { return tmp_.file(name); }
  TempFolder tmp_;
};

bool is_expert(const std::string& name) { return name.find("_exps.") != std::string::npos; }

int layer_of(const std::string& name) {  // blk.N.* -> N
  return std::stoi(name.substr(4, name.find('.', 4) - 4));
}

// Every tensor of `got`: routed experts as in `experts_from(layer)`, the others as in `input`.
void expect_tensors(const gguf::Reader& got, const gguf::Reader& input,
                    const std::function<const gguf::Reader&(int)>& experts_from) {
  ASSERT_EQ(got.tensors().size(), input.tensors().size());
  for (size_t i = 0; i < got.tensors().size(); ++i) {
    const gguf::TensorInfo& t = got.tensors()[i];
    ASSERT_EQ(t.name, input.tensors()[i].name) << "tensor order";
    const gguf::Reader& ref = is_expert(t.name) ? experts_from(layer_of(t.name)) : input;
    const gguf::TensorInfo* r = ref.find_tensor(t.name);
    ASSERT_NE(r, nullptr) << t.name;
    EXPECT_EQ(t.type, r->type) << t.name;
    EXPECT_EQ(t.dims, r->dims) << t.name;
    const auto a = got.tensor_data(t), b = ref.tensor_data(*r);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << t.name << " bytes";
  }
  ASSERT_EQ(got.metadata().size(), input.metadata().size());
  for (size_t i = 0; i < got.metadata().size(); ++i) {
    EXPECT_EQ(got.metadata()[i].key, input.metadata()[i].key);
  }
}

// The converter's file of the tiny checkpoint in `recipe` (its experts the reference bytes).
std::string converted(const fs::path& dir, model::Recipe recipe) {
  const std::string hf = (dir / "hf").string();
  if (!fs::exists(hf)) {
    synth::SynthOptions so;
    so.shape = model::kTiny;
    so.seed = 1;  // tiny-f32.gguf's (tests/model/make_models.sh)
    EXPECT_TRUE(synth::write_hf_checkpoint(so, hf).is_ok());
  }
  const std::string path =
      (dir / ("converted-" + std::string(model::to_string(recipe)) + ".gguf")).string();
  convert::ConvertOptions co;
  co.src_dir = hf;
  co.output = path;
  co.recipe = recipe;
  co.vocab_gguf = DS4_TEST_VOCAB_PATH;
  co.threads = 2;
  EXPECT_TRUE(convert::convert_checkpoint(co).is_ok());
  return path;
}

TEST_F(QuantizeTest, FloatExpertsGetTheConvertersBytesForEachRecipe) {
  const auto f32 = gguf::Reader::open(model_path("tiny-f32"));
  ASSERT_TRUE(f32.is_ok());
  for (const model::Recipe recipe : {model::Recipe::kQ2, model::Recipe::kQ4, model::Recipe::kQ8}) {
    SCOPED_TRACE(std::string(model::to_string(recipe)));
    quantize::QuantizeReport report;
    const std::string path = out(std::string(model::to_string(recipe)) + ".gguf");
    ASSERT_TRUE(
        quantize::quantize_model(
            {.input = model_path("tiny-f32"), .output = path, .recipe = recipe, .threads = 2},
            &report)
            .is_ok());
    EXPECT_EQ(report.quantized,
              3u * static_cast<size_t>(model::check_model_file(*f32).shape.n_layer));
    const auto got = gguf::Reader::open(path);
    const auto ref = gguf::Reader::open(converted(tmp_.path(), recipe));
    ASSERT_TRUE(got.is_ok() && ref.is_ok());
    EXPECT_EQ(report.bytes, got->file_size());
    expect_tensors(*got, *f32, [&](int) -> const gguf::Reader& { return *ref; });
    EXPECT_TRUE(model::check_model_file(*got).problems.empty());
  }
}

// With an importance matrix (a calibration run of tiny-f32 itself) the two paths still agree
// byte for byte: quantize of the f32 file and convert of the checkpoint, both with --imatrix; and
// the matrix changes the experts' bytes (the q2 encoders follow the weights).
TEST_F(QuantizeTest, AnImatrixGivesTheSameExpertBytesThroughConvert) {
  const std::string corpus = out("corpus.txt");
  {
    std::ofstream f(corpus);
    for (int i = 0; i < 40; ++i) f << "Line " << i << " of a short calibration text, with words.\n";
  }
  const std::string im = out("tiny.imatrix");
  ASSERT_TRUE(imatrix::calibrate({.model = model_path("tiny-f32"),
                                  .text_files = {corpus},
                                  .output = im,
                                  .chunk_tokens = 64,
                                  .threads = 2})
                  .is_ok());
  const std::string path = out("q2i.gguf");
  ASSERT_TRUE(
      quantize::quantize_model(
          {.input = model_path("tiny-f32"), .output = path, .imatrix = im, .threads = 2}, nullptr)
          .is_ok());
  const std::string hf = out("hf");
  synth::SynthOptions so;
  so.shape = model::kTiny;
  so.seed = 1;
  ASSERT_TRUE(synth::write_hf_checkpoint(so, hf).is_ok());
  convert::ConvertOptions co;
  co.src_dir = hf;
  co.output = out("converted-q2i.gguf");
  co.recipe = model::Recipe::kQ2;
  co.vocab_gguf = DS4_TEST_VOCAB_PATH;
  co.imatrix = im;
  co.threads = 2;
  ASSERT_TRUE(convert::convert_checkpoint(co).is_ok());
  const auto got = gguf::Reader::open(path);
  const auto ref = gguf::Reader::open(co.output);
  const auto f32 = gguf::Reader::open(model_path("tiny-f32"));
  const auto plain = gguf::Reader::open(converted(tmp_.path(), model::Recipe::kQ2));
  ASSERT_TRUE(got.is_ok() && ref.is_ok() && f32.is_ok() && plain.is_ok());
  expect_tensors(*got, *f32, [&](int) -> const gguf::Reader& { return *ref; });
  size_t changed = 0;
  for (const gguf::TensorInfo& t : got->tensors()) {
    if (!is_expert(t.name)) continue;
    const auto a = got->tensor_data(t), b = plain->tensor_data(*plain->find_tensor(t.name));
    changed += !std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  EXPECT_GT(changed, 0u) << "the importance matrix changed no expert tensor";
}

TEST_F(QuantizeTest, TheLastLayersAtQ4AndTheFileRuns) {
  const auto f32 = gguf::Reader::open(model_path("tiny-f32"));
  const auto q2 = gguf::Reader::open(converted(tmp_.path(), model::Recipe::kQ2));
  const auto q4 = gguf::Reader::open(converted(tmp_.path(), model::Recipe::kQ4));
  ASSERT_TRUE(f32.is_ok() && q2.is_ok() && q4.is_ok());
  const int n_layer = model::check_model_file(*f32).shape.n_layer;
  const std::string path = out("mix.gguf");
  ASSERT_TRUE(quantize::quantize_model(
                  {.input = model_path("tiny-f32"), .output = path, .q4_last = 1}, nullptr)
                  .is_ok());
  const auto got = gguf::Reader::open(path);
  ASSERT_TRUE(got.is_ok());
  expect_tensors(*got, *f32, [&](int layer) -> const gguf::Reader& {
    return layer >= n_layer - 1 ? *q4 : *q2;
  });
  // It loads and runs: finite logits after a prompt. (How near they are to the f32 model's says
  // little on random weights: both this file and an all-q2 one are ~0.93 rel L2 away.)
  EngineOptions o;
  o.model_path = path;
  auto e = Engine::open(o);
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  auto s = (*e)->create_session({.n_ctx = 256, .prefill_chunk = 64});
  ASSERT_TRUE(s.is_ok() && (*s)->append(test_prompt(40, 3)).is_ok());
  EXPECT_TRUE(std::all_of((*s)->logits().begin(), (*s)->logits().end(),
                          [](float v) { return std::isfinite(v); }));
}

TEST_F(QuantizeTest, BadInputsAndArgumentsAreRefusedWithNothingWritten) {
  const std::string path = out("bad.gguf");
  const auto refused = [&](quantize::QuantizeOptions o, const std::string& says) {
    o.output = o.output.empty() ? path : o.output;
    const Status st = quantize::quantize_model(o, nullptr);
    EXPECT_FALSE(st.is_ok()) << says;
    EXPECT_NE(st.message().find(says), std::string::npos) << st.message();
    EXPECT_FALSE(fs::exists(path)) << says;
    EXPECT_FALSE(fs::exists(path + ".partial")) << says;
  };
  refused({.input = model_path("tiny-q2")}, "is already quantized (iq2_xxs)");
  refused({.input = model_path("tiny-mtp")}, "is an MTP draft file");
  refused({.input = model_path("tiny-f32"), .recipe = model::Recipe::kQ4, .q4_last = 1},
          "--q4-last goes with the q2 recipe");
  refused({.input = model_path("tiny-f32"), .q4_last = 99}, "--q4-last 99");
  refused({.input = model_path("tiny-f32"), .recipe = model::Recipe::kF16}, "quantize writes q2");
  refused({.input = model_path("tiny-f32"), .output = model_path("tiny-f32")}, "is the input file");
  refused({.input = out("missing.gguf")}, "missing.gguf");
  // A truncated copy of the f32 file.
  const std::string cut = out("cut.gguf");
  fs::copy_file(model_path("tiny-f32"), cut);
  fs::resize_file(cut, fs::file_size(cut) / 2);
  refused({.input = cut}, "cut.gguf");
}

}  // namespace
}  // namespace ds4::test
