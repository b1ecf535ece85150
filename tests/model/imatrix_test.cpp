// tests/model/imatrix_test.cpp: importance matrices (tools/imatrix, issue 53).
// - On the small shape's own activations (a calibration run of small-f32), quantizing its expert
//   rows with the importance matrix lowers the importance-weighted squared error against quantizing
//   them without (IQ2_XXS gate rows, Q2_K down rows), for every expert the calibration reached.
// - An interrupted run resumed gives the file of a run in one go, byte for byte; two runs over two
//   files merged equal one run over both (row counts exactly, sums to double rounding).
// - Hostile or mismatched inputs are refused: a corpus line that is not a chat prompt, an empty
//   corpus, resuming with another corpus, merging two models' matrices, a damaged file, quantizing
//   with another shape's matrix.
#include "tools/imatrix/imatrix.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "model_test_util.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"
#include "temp_folder.h"
#include "tools/imatrix/calibrate.h"
#include "tools/quantize/quantize.h"

namespace ds4::test {
namespace {

namespace fs = std::filesystem;

// Calibration text written for this test (a few paragraphs of ordinary prose and some code).
constexpr const char* kCorpus =
    "The river ran slowly past the old mill, where the wheel had not turned for thirty years. "
    "Children came down in the evening to throw stones into the water and count the rings. "
    "Their grandparents remembered the miller, a patient man who kept a ledger of every sack of "
    "grain and every debt, and who never once raised his voice in the market square.\n\n"
    "def moving_average(values, window):\n    out = []\n    total = 0.0\n"
    "    for i, v in enumerate(values):\n        total += v\n        if i >= window:\n"
    "            total -= values[i - window]\n        out.append(total / min(i + 1, window))\n"
    "    return out\n\n"
    "In the spring the fields flooded and the road to the village was closed for a week. The "
    "baker sent bread across on a raft, and the postman waded through with letters held above "
    "his head. Nobody complained much; the flood came every year, and every year it went away.\n";

class ImatrixTest : public ::testing::Test {
 protected:
  void SetUp() override { corpus_ = write("corpus.txt", kCorpus); }
  std::string out(const std::string& name) const { return tmp_.file(name); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(out(name), std::ios::binary) << text;
    return out(name);
  }
  TempFolder tmp_;
  std::string corpus_;
};

std::vector<char> bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Sum over the rows of sum_c w_c (x_c - decoded_c)^2 for rows of `cols` values encoded as `t`.
double weighted_error(gguf::GgufType t, const float* rows, int64_t n_rows, int64_t cols,
                      const std::vector<float>& w, const float* importance) {
  const uint64_t rb = *gguf::byte_size(t, static_cast<uint64_t>(cols));
  std::vector<uint8_t> packed(static_cast<size_t>(n_rows) * rb);
  EXPECT_TRUE(quant::quantize_rows(t, rows, packed.data(), n_rows, cols, importance).is_ok());
  std::vector<float> back(static_cast<size_t>(cols));
  double err = 0;
  for (int64_t r = 0; r < n_rows; ++r) {
    EXPECT_TRUE(quant::dequantize(t, packed.data() + r * rb, back.data(), cols).is_ok());
    for (int64_t c = 0; c < cols; ++c) {
      const double d = rows[r * cols + c] - back[static_cast<size_t>(c)];
      err += w[static_cast<size_t>(c)] * d * d;
    }
  }
  return err;
}

TEST_F(ImatrixTest, ItLowersTheWeightedErrorOnTheSmallShapesOwnActivations) {
  const std::string im_path = out("small.imatrix.gguf");
  imatrix::CalibrateReport report;
  ASSERT_TRUE(imatrix::calibrate({.model = model_path("small-f32"),
                                  .text_files = {corpus_},
                                  .output = im_path,
                                  .chunk_tokens = 64,
                                  .threads = 2},
                                 &report)
                  .is_ok());
  EXPECT_EQ(report.chunks_done, report.chunks_total);
  const auto im = imatrix::read_imatrix(im_path);
  ASSERT_TRUE(im.is_ok()) << im.status().message();
  const auto file = gguf::Reader::open(model_path("small-f32"));
  ASSERT_TRUE(file.is_ok());
  double with = 0, without = 0;
  int experts = 0;
  for (const int layer : {2, 5}) {
    for (const bool down : {false, true}) {
      const std::string name = "blk." + std::to_string(layer) +
                               (down ? ".ffn_down_exps.weight" : ".ffn_gate_exps.weight");
      const gguf::TensorInfo* t = file->find_tensor(name);
      ASSERT_NE(t, nullptr);
      const int64_t cols = static_cast<int64_t>(t->dims[0]),
                    rows = static_cast<int64_t>(t->dims[1]);
      const gguf::GgufType to = down ? gguf::GgufType::kQ2_K : gguf::GgufType::kIQ2_XXS;
      for (int e = 0; e < im->dims.n_expert; ++e) {
        const auto w = im->importance(layer, e, down);
        if (!w) continue;  // no calibration row reached it
        const float* x =
            reinterpret_cast<const float*>(file->tensor_data(*t).data()) + e * rows * cols;
        const int64_t n = std::min<int64_t>(rows, 64);  // 64 rows of each expert
        with += weighted_error(to, x, n, cols, *w, w->data());
        without += weighted_error(to, x, n, cols, *w, nullptr);
        ++experts;
      }
    }
  }
  std::printf("  %d expert matrices: weighted error with the imatrix %.6g, without %.6g (%.3f)\n",
              experts, with, without, with / without);
  ASSERT_GT(experts, 8);
  EXPECT_LT(with, 0.97 * without);
}

TEST_F(ImatrixTest, AResumedRunAndAMergeAddUp) {
  const imatrix::CalibrateOptions base{.model = model_path("tiny-f32"),
                                       .text_files = {corpus_},
                                       .chunk_tokens = 32,
                                       .save_every = 2,
                                       .threads = 2};
  auto whole = base;
  whole.output = out("whole.gguf");
  ASSERT_TRUE(imatrix::calibrate(whole).is_ok());
  auto cut = base;
  cut.output = out("cut.gguf");
  cut.max_chunks = 3;
  imatrix::CalibrateReport first, second;
  ASSERT_TRUE(imatrix::calibrate(cut, &first).is_ok());
  EXPECT_EQ(first.chunks_done, 3u);
  cut.max_chunks = 0;
  ASSERT_TRUE(imatrix::calibrate(cut, &second).is_ok());
  EXPECT_EQ(second.chunks_resumed, 3u);
  EXPECT_EQ(bytes_of(cut.output), bytes_of(whole.output)) << "resumed != in one go";

  // Two corpora run apart and merged, against one run over both.
  const std::string other = write("other.txt", std::string(kCorpus).substr(200) + " The end.");
  auto a = base, b = base, both = base;
  a.output = out("a.gguf");
  b.text_files = {other};
  b.output = out("b.gguf");
  both.text_files = {corpus_, other};
  both.output = out("both.gguf");
  ASSERT_TRUE(imatrix::calibrate(a).is_ok() && imatrix::calibrate(b).is_ok() &&
              imatrix::calibrate(both).is_ok());
  auto ma = imatrix::read_imatrix(a.output);
  const auto mb = imatrix::read_imatrix(b.output), mboth = imatrix::read_imatrix(both.output);
  ASSERT_TRUE(ma.is_ok() && mb.is_ok() && mboth.is_ok());
  ASSERT_TRUE(imatrix::merge(*ma, *mb).is_ok());
  EXPECT_EQ(ma->chunks, mboth->chunks);
  EXPECT_EQ(ma->in_rows, mboth->in_rows);
  EXPECT_EQ(ma->down_rows, mboth->down_rows);
  double worst = 0;
  for (size_t i = 0; i < ma->in_sum_sq.size(); ++i) {
    worst = std::max(worst, std::abs(ma->in_sum_sq[i] - mboth->in_sum_sq[i]) /
                                std::max(1e-300, std::abs(mboth->in_sum_sq[i])));
  }
  for (size_t i = 0; i < ma->down_sum_sq.size(); ++i) {
    worst = std::max(worst, std::abs(ma->down_sum_sq[i] - mboth->down_sum_sq[i]) /
                                std::max(1e-300, std::abs(mboth->down_sum_sq[i])));
  }
  EXPECT_LT(worst, 1e-12) << "merged sums differ beyond the order of additions";
}

TEST_F(ImatrixTest, HostileAndMismatchedInputsAreRefused) {
  const auto refused = [](const Status& st, const std::string& says) {
    EXPECT_FALSE(st.is_ok()) << says;
    EXPECT_NE(st.message().find(says), std::string::npos) << st.message();
  };
  imatrix::CalibrateOptions o{
      .model = model_path("tiny-f32"), .output = out("x.gguf"), .chunk_tokens = 32, .threads = 2};
  refused(imatrix::calibrate(o), "no calibration input");
  auto chat = o;
  chat.chat_files = {write("chat.jsonl", "{\"prompt\": \"hello\"}\n{\"messages\": 3}\n")};
  refused(imatrix::calibrate(chat), "chat.jsonl line 2");
  chat.chat_files = {write("bad.jsonl", "{\"prompt\": \"a\"}\nnot json\n")};
  refused(imatrix::calibrate(chat), "line 2: not a JSON object");
  chat.chat_files = {
      write("role.jsonl", "{\"messages\": [{\"role\": \"wizard\", \"content\": \"x\"}]}\n")};
  refused(imatrix::calibrate(chat), "role 'wizard'");
  auto empty = o;
  empty.text_files = {write("empty.txt", "")};
  refused(imatrix::calibrate(empty), "holds no text");
  EXPECT_FALSE(fs::exists(o.output)) << "a refused run wrote its output";

  // A finished run's file resumed with another corpus; merged with another model's.
  auto good = o;
  good.text_files = {write("corpus2.txt", kCorpus)};
  ASSERT_TRUE(imatrix::calibrate(good).is_ok());
  auto other = good;
  other.text_files = {write("other.txt", "A different text altogether, short.")};
  refused(imatrix::calibrate(other), "another corpus");
  auto small = good;
  small.model = model_path("small-f32");
  small.output = out("small.gguf");
  small.max_chunks = 1;
  ASSERT_TRUE(imatrix::calibrate(small).is_ok());
  auto tiny_m = imatrix::read_imatrix(good.output);
  const auto small_m = imatrix::read_imatrix(small.output);
  ASSERT_TRUE(tiny_m.is_ok() && small_m.is_ok());
  refused(imatrix::merge(*tiny_m, *small_m), "different models");
  refused(quantize::quantize_model(
              {.input = model_path("small-f32"), .output = out("q.gguf"), .imatrix = good.output},
              nullptr),
          "of another shape");
  EXPECT_FALSE(fs::exists(out("q.gguf")));
  // Damaged: truncated, and another GGUF altogether.
  const std::string cut = out("cut.gguf");
  fs::copy_file(good.output, cut);
  fs::resize_file(cut, fs::file_size(cut) - 100);
  EXPECT_FALSE(imatrix::read_imatrix(cut).is_ok());
  refused(imatrix::read_imatrix(model_path("tiny-q2")).status(), "is not an importance matrix");
}

}  // namespace
}  // namespace ds4::test
