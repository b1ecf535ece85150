// Slice files (ds4-gguf split; features.md §10.1 "each process maps only the tensors of its
// slice from its GGUF"; docs/distributed.md, "Slice files"): a file cut from a model for a layer
// range loads on its own, and the chain of slice files gives the whole model's logits bit for bit
// on the CPU backend (prefill in chunks, then decoding), on tiny f32 (two slices) and tiny q2
// (three, the middle one holding a hash-routed layer); each slice file's output equals the same
// slice opened from the whole file; its fingerprint is the whole file's. Also the refusals: a
// range the slice file does not hold (the whole model among them) names both ranges, and
// write_slice_file refuses ranges outside the model or its input and leaves no file behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "model_test_util.h"
#include "temp_folder.h"
#include "tools/split/split.h"

namespace ds4::test {
namespace {

namespace fs = std::filesystem;

constexpr int kPromptTokens = 40;
constexpr int kDecodeTokens = 6;
constexpr int kChunk = 16;  // several prefill chunks per slice call

Result<std::unique_ptr<Engine>> open_layers(const std::string& path, LayerSlice layers) {
  EngineOptions o;
  o.model_path = path;
  o.layers = layers;
  return Engine::open(o);
}

std::unique_ptr<Engine> must_open(const std::string& path, LayerSlice layers) {
  auto e = open_layers(path, layers);
  EXPECT_TRUE(e.is_ok()) << path << ": " << e.status().message();
  return e.is_ok() ? std::move(e).value() : nullptr;
}

std::unique_ptr<Session> session_of(Engine& e) {
  auto s = e.create_session({.n_ctx = 256, .prefill_chunk = kChunk});
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  return s.is_ok() ? std::move(s).value() : nullptr;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// One slice, opened from its slice file and from the whole file, fed the same input.
struct SliceStage {
  std::unique_ptr<Engine> from_slice_file, from_whole_file;
  std::unique_ptr<Session> a, b;
};

// Splits model `name` at `cuts` (the first layer of each later slice) into slice files, checks
// each file's fingerprint against the whole file's, and runs the chain of slice-file engines
// against the whole model and, stage by stage, against the same slices of the whole file.
void expect_slice_files_equal_whole(const std::string& name, const std::vector<int>& cuts) {
  TempFolder tmp;
  auto whole = open_model(name, /*hf_mode=*/false);
  ASSERT_NE(whole, nullptr);
  const int n_layer = whole->info().n_layer;
  std::vector<SliceStage> stages;
  int first = 0;
  for (size_t i = 0; i <= cuts.size(); ++i) {
    const bool head = i == cuts.size();
    const LayerSlice layers{.first = first, .last = head ? -1 : cuts[i] - 1, .output = head};
    const std::string path = tmp.file("slice" + std::to_string(i) + ".gguf");
    split::SplitReport report;
    const Status st = split::write_slice_file(model_path(name), path, layers, &report);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ(report.fingerprint, whole->info().fingerprint);
    EXPECT_LT(fs::file_size(path), fs::file_size(model_path(name)));
    SliceStage s;
    s.from_slice_file = must_open(path, layers);
    s.from_whole_file = must_open(model_path(name), layers);
    ASSERT_NE(s.from_slice_file, nullptr);
    ASSERT_NE(s.from_whole_file, nullptr);
    EXPECT_EQ(s.from_slice_file->info().fingerprint, whole->info().fingerprint)
        << "a slice file must name the model it was cut from";
    EXPECT_EQ(s.from_slice_file->info().layer_first, s.from_whole_file->info().layer_first);
    EXPECT_EQ(s.from_slice_file->info().layer_last, s.from_whole_file->info().layer_last);
    EXPECT_EQ(s.from_slice_file->info().expert_bits, s.from_whole_file->info().expert_bits);
    s.a = session_of(*s.from_slice_file);
    s.b = session_of(*s.from_whole_file);
    ASSERT_NE(s.a, nullptr);
    ASSERT_NE(s.b, nullptr);
    stages.push_back(std::move(s));
    first = head ? n_layer : cuts[i];
  }
  auto ref = session_of(*whole);
  ASSERT_NE(ref, nullptr);
  // Runs `tokens` through both chains, the whole file's stage fed the slice file's input so that
  // each stage is compared on its own; returns the slice files' logits.
  const auto through = [&](std::span<const TokenId> tokens) {
    std::vector<float> hidden;
    for (size_t i = 0; i < stages.size(); ++i) {
      auto got = stages[i].a->append_slice(tokens, hidden);
      auto want = stages[i].b->append_slice(tokens, hidden);
      EXPECT_TRUE(got.is_ok() && want.is_ok())
          << got.status().message() << " / " << want.status().message();
      if (!got.is_ok() || !want.is_ok()) return std::vector<float>{};
      EXPECT_TRUE(same_bits(*got, *want)) << "slice " << i << " differs from the whole file's";
      hidden = std::move(got).value();
    }
    return hidden;
  };
  const std::vector<TokenId> prompt = test_prompt(kPromptTokens, 7);
  ASSERT_TRUE(ref->append(prompt).is_ok());
  std::vector<float> got = through(prompt);
  ASSERT_EQ(got.size(), ref->logits().size());
  EXPECT_TRUE(same_bits(got, ref->logits()))
      << "prefill logits differ, rel L2 " << rel_l2(got, ref->logits());
  for (int i = 0; i < kDecodeTokens; ++i) {
    const TokenId next = argmax_of(ref->logits());
    ASSERT_TRUE(ref->eval(next).is_ok());
    got = through(std::span<const TokenId>(&next, 1));
    ASSERT_EQ(got.size(), ref->logits().size());
    EXPECT_TRUE(same_bits(got, ref->logits()))
        << "decode step " << i << " differs, rel L2 " << rel_l2(got, ref->logits());
  }
}

TEST(SliceFile, TwoSliceFilesEqualTheWholeModelF32) {
  expect_slice_files_equal_whole("tiny-f32", {3});
}

TEST(SliceFile, ThreeSliceFilesEqualTheWholeModelQ2) {
  // tiny: sliding, sliding, CSA+hash, HCA, CSA, HCA; the middle file holds the hash layer.
  expect_slice_files_equal_whole("tiny-q2", {2, 4});
}

TEST(SliceFile, RangesInsideASliceFileLoadAndOthersAreRefused) {
  TempFolder tmp;
  const std::string front = tmp.file("front.gguf"), back = tmp.file("back.gguf");
  ASSERT_TRUE(split::write_slice_file(model_path("tiny-q2"), front,
                                      {.first = 0, .last = 2, .output = false})
                  .is_ok());
  ASSERT_TRUE(
      split::write_slice_file(model_path("tiny-q2"), back, {.first = 3, .last = -1, .output = true})
          .is_ok());
  // Inside: fewer layers, from either end.
  EXPECT_NE(must_open(front, {.first = 0, .last = 1, .output = false}), nullptr);
  EXPECT_NE(must_open(front, {.first = 1, .last = 2, .output = false}), nullptr);
  EXPECT_NE(must_open(back, {.first = 4, .last = -1, .output = true}), nullptr);
  EXPECT_NE(must_open(back, {.first = 3, .last = 4, .output = false}), nullptr);
  EXPECT_NE(must_open(back, {.first = 3, .last = 5, .output = false}), nullptr);  // no head
  const auto refused = [](const std::string& path, LayerSlice layers, const std::string& held,
                          const std::string& asked) {
    auto e = open_layers(path, layers);
    ASSERT_FALSE(e.is_ok()) << asked;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    const std::string& m = e.status().message();
    EXPECT_NE(m.find("slice file holding layers " + held), std::string::npos) << m;
    EXPECT_NE(m.find("layers " + asked), std::string::npos) << m;
    EXPECT_NE(m.find(path), std::string::npos) << m;
  };
  refused(front, {}, "0:2", "0:output (the whole model)");
  refused(front, {.first = 1, .last = 3, .output = false}, "0:2", "1:3");
  refused(back, {}, "3:output", "0:output");
  refused(back, {.first = 2, .last = -1, .output = true}, "3:output", "2:output");
  // The engine's own range checks still come first.
  auto past = open_layers(back, {.first = 3, .last = 6, .output = false});
  ASSERT_FALSE(past.is_ok());
  EXPECT_NE(past.status().message().find("not a range of this model"), std::string::npos);
}

TEST(SliceFile, SlicingASliceFileKeepsTheModelsFingerprint) {
  TempFolder tmp;
  const std::string front = tmp.file("front.gguf"), inner = tmp.file("inner.gguf");
  ASSERT_TRUE(split::write_slice_file(model_path("tiny-f32"), front,
                                      {.first = 0, .last = 3, .output = false})
                  .is_ok());
  split::SplitReport report;
  ASSERT_TRUE(
      split::write_slice_file(front, inner, {.first = 1, .last = 2, .output = false}, &report)
          .is_ok());
  auto whole = open_model("tiny-f32", false);
  ASSERT_NE(whole, nullptr);
  EXPECT_EQ(report.fingerprint, whole->info().fingerprint);
  auto e = must_open(inner, {.first = 1, .last = 2, .output = false});
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->info().fingerprint, whole->info().fingerprint);
  EXPECT_LT(fs::file_size(inner), fs::file_size(front));
}

TEST(SliceFile, WriteRefusesRangesItCannotCutAndLeavesNoFile) {
  TempFolder tmp;
  const std::string out = tmp.file("out.gguf"), front = tmp.file("front.gguf");
  const auto code = [&](const std::string& in, LayerSlice layers, const std::string& to) {
    return split::write_slice_file(in, to, layers).code();
  };
  const std::string tiny = model_path("tiny-q2");
  EXPECT_EQ(code(tiny, {.first = 0, .last = 6, .output = false}, out),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code(tiny, {.first = 0, .last = 2, .output = true}, out),
            StatusCode::kInvalidArgument);  // the head only after the last layer
  const StatusCode missing =
      code(tmp.file("missing.gguf"), {.first = 0, .last = 1, .output = false}, out);
  EXPECT_NE(missing, StatusCode::kOk);
  EXPECT_NE(missing, StatusCode::kInvalidArgument);  // ds4-gguf exits 1, not 2
  EXPECT_TRUE(tmp.names().empty()) << "a refused split left a file";
  ASSERT_TRUE(
      split::write_slice_file(tiny, front, {.first = 0, .last = 2, .output = false}).is_ok());
  EXPECT_EQ(code(front, {.first = 2, .last = 3, .output = false}, out),
            StatusCode::kInvalidArgument);  // not in the input slice
  EXPECT_EQ(code(front, {}, out), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(front, {.first = 0, .last = 1, .output = false}, front),
            StatusCode::kInvalidArgument);  // the output is the input
  EXPECT_EQ(tmp.names(), std::vector<std::string>{"front.gguf"});
  EXPECT_NE(must_open(front, {.first = 0, .last = 2, .output = false}), nullptr);
}

}  // namespace
}  // namespace ds4::test
