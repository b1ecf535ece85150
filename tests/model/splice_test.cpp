// tests/model/splice_test.cpp: `ds4-gguf splice` (tools/splice, issue 53). Slice files cut by
// `ds4-gguf split` splice back, in any order, into the file they came from byte for byte (f32 and
// q2 files; tiny-f32 holds an ignored tensor, which the slices carry); the q2 file with its last
// layers and head taken from the q4 file's slice has those tensors' q4 bytes and the rest's q2
// bytes, and loads and runs; bad inputs are refused, an existing output kept.
#include "tools/splice/splice.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "model/validate.h"
#include "model_test_util.h"
#include "temp_folder.h"
#include "tools/split/split.h"

namespace ds4::test {
namespace {

namespace fs = std::filesystem;

class SpliceTest : public ::testing::Test {
 protected:
  std::string out(const std::string& name) const { return tmp_.file(name); }
  std::string cut(const std::string& model, LayerSlice layers, const std::string& name) const {
    const std::string path = out(name);
    const Status st = split::write_slice_file(model_path(model), path, layers);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    return path;
  }
  TempFolder tmp_;
};

std::vector<char> bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST_F(SpliceTest, SlicesSpliceBackIntoTheirFileByteForByte) {
  for (const char* model : {"tiny-f32", "tiny-q2"}) {
    SCOPED_TRACE(model);
    const std::string a = cut(model, {.first = 0, .last = 2, .output = false}, "a.gguf");
    const std::string b = cut(model, {.first = 3, .last = 4, .output = false}, "b.gguf");
    const std::string c = cut(model, {.first = 5, .last = -1, .output = true}, "c.gguf");
    const std::string whole = out("whole.gguf");
    splice::SpliceReport report;
    ASSERT_TRUE(splice::splice_files({c, a, b}, whole, &report).is_ok());
    EXPECT_EQ(bytes_of(whole), bytes_of(model_path(model)));
    EXPECT_EQ(report.bytes, fs::file_size(whole));
    EXPECT_EQ(report.from.size(), 3u);
  }
}

TEST_F(SpliceTest, TheLastLayersOfTheQ4FileOverTheQ2File) {
  const std::string tail = cut("tiny-q4", {.first = 4, .last = -1, .output = true}, "q4tail.gguf");
  const std::string mix = out("mix.gguf");
  splice::SpliceReport report;
  ASSERT_TRUE(splice::splice_files({model_path("tiny-q2"), tail}, mix, &report).is_ok());
  const auto got = gguf::Reader::open(mix);
  const auto q2 = gguf::Reader::open(model_path("tiny-q2"));
  const auto q4 = gguf::Reader::open(model_path("tiny-q4"));
  ASSERT_TRUE(got.is_ok() && q2.is_ok() && q4.is_ok());
  size_t from_q4 = 0;
  for (const gguf::TensorInfo& t : got->tensors()) {
    const bool late = t.name.starts_with("blk.4.") || t.name.starts_with("blk.5.") ||
                      t.name.starts_with("output");
    const gguf::Reader& ref = late ? *q4 : *q2;
    const gguf::TensorInfo* r = ref.find_tensor(t.name);
    ASSERT_NE(r, nullptr) << t.name;
    EXPECT_EQ(t.type, r->type) << t.name;
    const auto x = got->tensor_data(t), y = ref.tensor_data(*r);
    EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end())) << t.name;
    from_q4 += late;
  }
  EXPECT_EQ(report.from, (std::vector<size_t>{got->tensors().size() - from_q4, from_q4}));
  EXPECT_TRUE(model::check_model_file(*got).problems.empty());
  EngineOptions o;
  o.model_path = mix;
  auto e = Engine::open(o);
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  EXPECT_TRUE(e.value()->info().fingerprint != open_model("tiny-q2", false)->info().fingerprint);
  auto s = (*e)->create_session({.n_ctx = 256, .prefill_chunk = 64});
  ASSERT_TRUE(s.is_ok() && (*s)->append(test_prompt(40, 3)).is_ok());
  EXPECT_TRUE(std::all_of((*s)->logits().begin(), (*s)->logits().end(),
                          [](float v) { return std::isfinite(v); }));
}

TEST_F(SpliceTest, BadInputsAreRefusedAndAnExistingOutputKept) {
  const std::string path = out("out.gguf");
  { std::ofstream(path) << "an earlier file"; }
  const std::string front = cut("tiny-q2", {.first = 0, .last = 2, .output = false}, "front.gguf");
  const auto refused = [&](const std::vector<std::string>& inputs, const std::string& says) {
    const Status st = splice::splice_files(inputs, path, nullptr);
    EXPECT_FALSE(st.is_ok()) << says;
    EXPECT_NE(st.message().find(says), std::string::npos) << st.message();
    std::ifstream f(path);
    std::string kept;
    std::getline(f, kept);
    EXPECT_EQ(kept, "an earlier file") << says;
    EXPECT_FALSE(fs::exists(path + ".splice")) << says;
  };
  refused({model_path("tiny-q2")}, "two input files or more");
  refused({front, cut("tiny-q2", {.first = 3, .last = 4, .output = false}, "mid.gguf")},
          "no input holds 'blk.5.");
  refused({model_path("tiny-q2"), model_path("small-f32")}, "of shape");
  refused({model_path("tiny-q2"), model_path("tiny-mtp")}, "is an MTP draft file");
  refused({model_path("tiny-q2"), out("missing.gguf")}, "missing.gguf");
  refused({model_path("tiny-q2"), path}, "is an input file");
}

}  // namespace
}  // namespace ds4::test
