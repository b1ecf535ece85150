// src/backend/cuda/kernels/compressor_test.cpp (label cuda): the compressor lanes of one row in
// each of several sequences in one set of launches (launch_compressor_seqs, a batched decode
// step) against each lane launched alone (launch_compressor): the same emitted rows, frontiers
// and rewind logs, bit for bit, for both ratios, the attention's and the indexer's lanes, with
// and without the FP8 / FP4 simulations, some sequences marked for a rewind and some emitting.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/kernels/attention.cuh"
#include "backend/cuda/kernels/kernel_test.h"

namespace ds4::backend::cuda::test {
namespace {

constexpr int kSeqs = 21;  // more than the side lanes, fewer than kMaxSeqRows

std::vector<float> random_floats(size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// One sequence's device state for a lane: its frontier, its emitted row and, when marked, the
// rows saved at the mark and the log of the positions since.
struct SeqState {
  DeviceBuffer st_kv, st_score, dst, save_kv, save_score, log_kv, log_score;
};

struct LaneShape {
  int ratio, hd;
  bool indexer;
};

// Everything one device buffer holds, as float bits.
std::vector<uint32_t> bits_of(const DeviceBuffer& b, size_t floats) {
  std::vector<uint32_t> v(floats);
  b.download(v.data(), floats * sizeof(float));
  return v;
}

void run_shape(const LaneShape& shape, bool qat, bool f16_rows, uint32_t seed) {
  const std::string what = "ratio " + std::to_string(shape.ratio) + " hd " +
                           std::to_string(shape.hd) + (qat ? " qat" : "") +
                           (f16_rows ? " f16" : "") + " seed " + std::to_string(seed);
  SCOPED_TRACE(what);
  std::mt19937 rng(seed);
  const int width = (shape.ratio == 4 ? 2 : 1) * shape.hd;
  const int frontier_rows = shape.ratio == 4 ? 8 : shape.ratio;
  const size_t frontier = static_cast<size_t>(frontier_rows) * width;
  constexpr int kLogRows = 32;
  const size_t log = static_cast<size_t>(kLogRows) * width;

  // The step's rows (row i: sequence i), the layer's ape and norm, RoPE frequencies.
  const DeviceBuffer kvc = to_device(random_floats(static_cast<size_t>(kSeqs) * width, rng, 1.0f));
  const DeviceBuffer gate = to_device(random_floats(static_cast<size_t>(kSeqs) * width, rng, 2.0f));
  const DeviceBuffer ape =
      to_device(random_floats(static_cast<size_t>(shape.ratio) * width, rng, 0.5f));
  std::vector<float> norm_host = random_floats(static_cast<size_t>(shape.hd), rng, 0.3f);
  for (float& x : norm_host) x += 1.0f;
  const DeviceBuffer norm = to_device(norm_host);
  RopeArg rope{};
  for (int k = 0; k < 32; ++k) rope.inv_freq[k] = std::pow(10000.0f, -static_cast<float>(k) / 32);

  // Positions: every residue of the ratio's window, so that some sequences emit (ratio 4: every
  // fourth; ratio 128: positions 255 and 383) and the others only update their frontiers; every
  // third sequence marked, at its position or a few rows before.
  std::vector<int> pos(kSeqs), mark(kSeqs, -1);
  for (int i = 0; i < kSeqs; ++i) {
    pos[i] = shape.ratio == 4 ? 16 + 3 * i : (i % 3 == 0 ? 255 + 128 * (i % 2) : 130 + 7 * i);
    if (i % 3 == 1) mark[i] = pos[i] - (i % 4);
  }
  std::vector<std::vector<float>> init_kv, init_score;
  for (int i = 0; i < kSeqs; ++i) {
    init_kv.push_back(random_floats(frontier, rng, 1.0f));
    init_score.push_back(random_floats(frontier, rng, 2.0f));
  }
  auto make_states = [&] {
    std::vector<SeqState> s;
    for (int i = 0; i < kSeqs; ++i) {
      SeqState st{to_device(init_kv[i]),
                  to_device(init_score[i]),
                  DeviceBuffer(sizeof(float) * shape.hd),
                  DeviceBuffer(sizeof(float) * frontier),
                  DeviceBuffer(sizeof(float) * frontier),
                  DeviceBuffer(sizeof(float) * log),
                  DeviceBuffer(sizeof(float) * log)};
      for (DeviceBuffer* b : {&st.dst, &st.save_kv, &st.save_score, &st.log_kv, &st.log_score})
        b->fill(0xff);  // NaN bits: a byte left unwritten by one side and not the other shows
      s.push_back(std::move(st));
    }
    return s;
  };
  auto lane_of = [&](SeqState& st, int i) {
    CompressorLane lane;
    lane.ratio = shape.ratio;
    lane.hd = shape.hd;
    lane.st_kv = st.st_kv.get<float>();
    lane.st_score = st.st_score.get<float>();
    lane.kvc = kvc.get<float>() + int64_t{i} * width;
    lane.kvc_stride = width;
    lane.gate = gate.get<float>() + int64_t{i} * width;
    lane.gate_stride = width;
    lane.ape = ape.get<float>();
    lane.ape_type = gguf::GgufType::kF32;
    lane.norm = norm.get<float>();
    lane.indexer_lane = shape.indexer;
    if (mark[i] >= 0) {
      lane.mark = mark[i];
      lane.log_rows = kLogRows;
      lane.save_kv = st.save_kv.get<float>();
      lane.save_score = st.save_score.get<float>();
      lane.log_kv = st.log_kv.get<float>();
      lane.log_score = st.log_score.get<float>();
    }
    return lane;
  };

  std::vector<SeqState> alone = make_states(), together = make_states();
  std::vector<int> emitted_alone(kSeqs);
  for (int i = 0; i < kSeqs; ++i) {
    emitted_alone[i] = launch_compressor(lane_of(alone[i], i), RowSpan{pos[i], 1}, rope, qat,
                                         f16_rows, alone[i].dst.get<float>(), nullptr);
  }
  CompressorSeqs seqs;
  seqs.n = kSeqs;
  for (int i = 0; i < kSeqs; ++i) {
    seqs.lane[i] = lane_of(together[i], i);
    seqs.pos[i] = pos[i];
    seqs.dst[i] = together[i].dst.get<float>();
  }
  std::vector<int> emitted(kMaxSeqRows, -1);
  launch_compressor_seqs(seqs, rope, qat, f16_rows, emitted.data(), nullptr);
  DS4_CUDA_CHECK(cudaDeviceSynchronize());

  int emitters = 0;
  for (int i = 0; i < kSeqs; ++i) {
    SCOPED_TRACE("sequence " + std::to_string(i) + " at " + std::to_string(pos[i]));
    EXPECT_EQ(emitted[i], emitted_alone[i]);
    emitters += emitted_alone[i];
    const SeqState &a = alone[i], &b = together[i];
    EXPECT_EQ(bits_of(a.st_kv, frontier), bits_of(b.st_kv, frontier));
    EXPECT_EQ(bits_of(a.st_score, frontier), bits_of(b.st_score, frontier));
    EXPECT_NE(bits_of(b.st_kv, frontier), bits_of(to_device(init_kv[i]), frontier))
        << "the frontier was not updated";
    EXPECT_EQ(bits_of(a.dst, shape.hd), bits_of(b.dst, shape.hd));
    if (emitted_alone[i] > 0) {
      std::vector<float> row(static_cast<size_t>(shape.hd));
      b.dst.download(row.data(), row.size() * sizeof(float));
      EXPECT_TRUE(std::any_of(row.begin(), row.end(), [](float x) {
        return std::isfinite(x) && x != 0.0f;
      })) << "no emitted row";
    }
    EXPECT_EQ(bits_of(a.save_kv, frontier), bits_of(b.save_kv, frontier));
    EXPECT_EQ(bits_of(a.save_score, frontier), bits_of(b.save_score, frontier));
    EXPECT_EQ(bits_of(a.log_kv, log), bits_of(b.log_kv, log));
    EXPECT_EQ(bits_of(a.log_score, log), bits_of(b.log_score, log));
  }
  EXPECT_GT(emitters, 0) << "no sequence emitted a row";
  EXPECT_LT(emitters, kSeqs) << "every sequence emitted a row";
}

TEST(CudaCompressor, SequencesInOneLaunchGetWhatEachGetsAlone) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const uint32_t seed = fresh_seed();
  for (const LaneShape shape :
       {LaneShape{4, 512, false}, LaneShape{128, 512, false}, LaneShape{4, 128, true}}) {
    for (const bool qat : {false, true}) run_shape(shape, qat, !qat, seed);
  }
}

}  // namespace
}  // namespace ds4::backend::cuda::test
