// src/backend/cuda/kernels/attention_test.cpp: sink attention on the device (launch_attention's
// decode rows on the split kernels of attention_split.cu, its batches on the prefill kernels, and
// launch_attention_seqs) against a double-precision evaluation of model.md §4.9 written here:
// softmax over the sink and the scaled scores of the raw window and the visible compressed rows,
// the weighted sum, inverse RoPE on the tail. Cases: a run of 3 consecutive rows with 3,000
// compressed rows each (ratio 128: spans of several rounds), a ratio-4 row whose indexer picks 512
// of 1,000 rows, a short window, a batch of 20 rows (launch_attention's prefill kernels), and a
// step of rows of two sequences at different positions (launch_attention_seqs' table); and
// batches on the f16 tensor-core kernel (launch_attention_flash) with f16 and float cached rows.
// Skips without a CUDA device.
#include "backend/cuda/kernels/attention.cuh"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/kernels/attention_flash.cuh"
#include "backend/cuda/kernels/kernel_test.h"
#include "base/f16.h"

namespace ds4::backend::cuda {
namespace {

using test::DeviceBuffer;
using test::fresh_seed;
using test::have_device;
using test::to_device;

constexpr int kHdT = 512, kNopeT = 448;
// Relative L2 distance allowed between a device output and the double evaluation, over all of a
// case's outputs. The device forms each score as float fused multiply-adds over 512 products and
// each weighted sum over up to ~3,100 rows: rounding errors of about sqrt(n) * 2^-24 relative for
// sums of random sign, a few 1e-6 here; 2e-5 leaves margin, while a wrong row, head, weight or
// rotation moves the output by far more (a missed row among 3,100 moves it by ~1e-3).
constexpr double kAttentionTol = 2e-5;

// The cached rows of one sequence, on the host and the device.
struct SeqData {
  SeqData(std::vector<float> r, std::vector<float> c)
      : ring(std::move(r)), comp(std::move(c)), dring(to_device(ring)), dcomp(to_device(comp)) {}
  std::vector<float> ring;  // ring_cap rows
  std::vector<float> comp;  // compressed rows
  DeviceBuffer dring, dcomp;
};
// One batch row: its position, its sequence and its indexer picks (used where it selects).
struct Row {
  int pos = 0;
  int seq = 0;
  std::vector<int32_t> visible;  // top_k entries
};

// Whether a row at pos reads the indexer's picks, and how many cached rows it attends to.
bool indexed(const AttentionGeometry& g, int pos) {
  return g.ratio == 4 && (pos + 1) / 4 > g.top_k;
}
int attended_rows(const AttentionGeometry& g, int pos) {
  const int n_all = g.ratio != 0 ? (pos + 1) / g.ratio : 0;
  return std::min(g.raw_cap, pos + 1) + (indexed(g, pos) ? g.top_k : n_all);
}

// Output of one row (n_head x 512) in double: model.md §4.9 with the row's geometry.
std::vector<double> reference_row(const float* q, const AttentionGeometry& g, const SeqData& s,
                                  const Row& r, const std::vector<float>& sinks,
                                  const RopeArg& rope) {
  const int n_raw = std::min(g.raw_cap, r.pos + 1);
  const int raw_head = (r.pos + 1 - n_raw) % g.ring_cap;
  const bool picks = indexed(g, r.pos);
  const int n_rows = attended_rows(g, r.pos);
  auto row = [&](int i) {
    if (i < n_raw) return s.ring.data() + int64_t{(raw_head + i) % g.ring_cap} * kHdT;
    const int c = i - n_raw;
    return s.comp.data() + int64_t{picks ? r.visible[static_cast<size_t>(c)] : c} * kHdT;
  };
  std::vector<double> out(static_cast<size_t>(g.n_head) * kHdT);
  std::vector<double> sc(static_cast<size_t>(n_rows));
  for (int h = 0; h < g.n_head; ++h) {
    const float* qh = q + int64_t{h} * kHdT;
    double m = sinks[static_cast<size_t>(h)];
    for (int i = 0; i < n_rows; ++i) {
      double d = 0.0;
      for (int k = 0; k < kHdT; ++k) d += double(qh[k]) * double(row(i)[k]);
      sc[static_cast<size_t>(i)] = d / std::sqrt(double(kHdT));
      m = std::max(m, sc[static_cast<size_t>(i)]);
    }
    double den = std::exp(double(sinks[static_cast<size_t>(h)]) - m);
    double* o = out.data() + int64_t{h} * kHdT;
    for (int i = 0; i < n_rows; ++i) {
      const double w = std::exp(sc[static_cast<size_t>(i)] - m);
      den += w;
      for (int k = 0; k < kHdT; ++k) o[k] += w * double(row(i)[k]);
    }
    for (int k = 0; k < kHdT; ++k) o[k] /= den;
    for (int p = 0; p < (kHdT - kNopeT) / 2; ++p) {  // inverse rotation of the tail pairs
      const double th = double(float(r.pos) * rope.inv_freq[p]);
      const double c = std::cos(th), sn = std::sin(th);
      double* t = o + kNopeT + 2 * p;
      const double x0 = t[0], x1 = t[1];
      t[0] = x0 * c + x1 * sn;
      t[1] = -x0 * sn + x1 * c;
    }
  }
  return out;
}

double rel_l2(const std::vector<float>& got, const std::vector<double>& want) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = double(got[i]) - want[i];
    num += d * d;
    den += want[i] * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

std::vector<float> random_floats(std::mt19937& rng, size_t n, float sd) {
  std::normal_distribution<float> normal(0.0f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

struct Case {
  const char* name;
  int ratio, top_k, raw_cap, n_comp;
  std::vector<int> positions;  // one row each; consecutive for a run
  bool seqs;                   // rows of separate sequences (launch_attention_seqs)
  bool flash = false;          // a run on launch_attention_flash (the f16 tensor cores)
  bool f16_values = false;     // cached rows rounded to f16 values (the exact-hi kernel)
};

void run_case(const Case& c) {
  const uint32_t seed = fresh_seed();
  std::printf("  %s: seed %u\n", c.name, seed);
  std::mt19937 rng(seed);
  AttentionGeometry g;
  g.n_head = 64;
  g.raw_cap = c.raw_cap;
  g.ring_cap = c.raw_cap + static_cast<int>(c.positions.size());
  g.ratio = c.ratio;
  g.top_k = c.top_k;
  g.f16_values = c.f16_values;
  RopeArg rope;
  for (int p = 0; p < 32; ++p) rope.inv_freq[p] = std::pow(10000.0f, -float(p) / 32.0f);
  const int n = static_cast<int>(c.positions.size());
  // Scores of a few units: softmax weights far from uniform, so a misplaced row shows.
  const std::vector<float> q = random_floats(rng, size_t{64} * kHdT * n, 2.0f);
  const std::vector<float> sinks = random_floats(rng, 64, 1.0f);
  // A run shares one sequence's ring and compressed rows; separate sequences have their own.
  std::vector<SeqData> data;
  for (int k = 0; k < (c.seqs ? n : 1); ++k) {
    std::vector<float> ring = random_floats(rng, size_t(g.ring_cap) * kHdT, 1.0f);  // drawn first
    std::vector<float> comp = random_floats(rng, size_t(c.n_comp) * kHdT, 1.0f);
    if (c.f16_values) {
      for (float& x : ring) x = f16_round(x);
      for (float& x : comp) x = f16_round(x);
    }
    data.emplace_back(std::move(ring), std::move(comp));
  }
  std::vector<Row> rows(static_cast<size_t>(n));
  std::vector<int32_t> all_picks;   // the run's picks, row after row
  std::vector<DeviceBuffer> picks;  // each row's, for the table of sequences
  g.max_rows = 0;
  for (int t = 0; t < n; ++t) {
    Row& r = rows[static_cast<size_t>(t)];
    r.pos = c.positions[static_cast<size_t>(t)];
    r.seq = c.seqs ? t : 0;
    r.visible.assign(static_cast<size_t>(c.top_k), 0);
    if (indexed(g, r.pos)) {  // top_k distinct rows of the (pos + 1) / 4 compressed ones
      std::vector<int32_t> ids(static_cast<size_t>((r.pos + 1) / 4));
      for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
      std::shuffle(ids.begin(), ids.end(), rng);
      std::copy_n(ids.begin(), c.top_k, r.visible.begin());
    }
    all_picks.insert(all_picks.end(), r.visible.begin(), r.visible.end());
    picks.push_back(to_device(r.visible));
    g.max_rows = std::max(g.max_rows, attended_rows(g, r.pos));
    // The case must hold every compressed row the position sees (else both sides read past it).
    ASSERT_TRUE(c.ratio == 0 || (r.pos + 1) / c.ratio <= c.n_comp) << c.name << ": n_comp";
  }
  DeviceBuffer dq = to_device(q), dsinks = to_device(sinks), dpicks = to_device(all_picks);
  std::vector<double> want;
  for (int t = 0; t < n; ++t) {
    const Row& r = rows[static_cast<size_t>(t)];
    const std::vector<double> o = reference_row(q.data() + int64_t{t} * 64 * kHdT, g,
                                                data[static_cast<size_t>(r.seq)], r, sinks, rope);
    want.insert(want.end(), o.begin(), o.end());
  }
  const int64_t scratch_floats = c.seqs ? attention_seqs_scratch_floats(64, g.max_rows, n)
                                        : attention_scratch_floats(64, g.max_rows, n);
  DeviceBuffer scratch(static_cast<size_t>(scratch_floats) * sizeof(float));
  DeviceBuffer dout(want.size() * sizeof(float));
  SeqRows table;
  for (int t = 0; c.seqs && t < n; ++t) {
    const Row& r = rows[static_cast<size_t>(t)];
    table.pos[t] = r.pos;
    table.ring[t] = data[static_cast<size_t>(r.seq)].dring.get<float>();
    table.comp[t] = data[static_cast<size_t>(r.seq)].dcomp.get<float>();
    table.visible[t] = picks[static_cast<size_t>(t)].get<int32_t>();
    table.n = n;
  }
  dout.fill(0xff);  // NaN: an unwritten output cannot pass
  const float* q0 = dq.get<float>();
  if (c.flash) {
    launch_attention_flash(q0, 64 * kHdT, g, data[0].dring.get<float>(), data[0].dcomp.get<float>(),
                           dpicks.get<int32_t>(), dsinks.get<float>(), rope,
                           RowSpan{rows[0].pos, n}, dout.get<float>(), 64 * kHdT, nullptr);
  } else if (c.seqs) {
    launch_attention_seqs(q0, 64 * kHdT, g, table, dsinks.get<float>(), rope, scratch.get<float>(),
                          scratch_floats, dout.get<float>(), 64 * kHdT, nullptr);
  } else {
    launch_attention(q0, 64 * kHdT, g, data[0].dring.get<float>(), data[0].dcomp.get<float>(),
                     dpicks.get<int32_t>(), dsinks.get<float>(), rope, RowSpan{rows[0].pos, n},
                     scratch.get<float>(), scratch_floats, dout.get<float>(), 64 * kHdT, nullptr);
  }
  DS4_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> got(want.size());
  dout.download(got.data(), got.size() * sizeof(float));
  const double d = rel_l2(got, want);
  std::printf("  %-34s rel L2 %.3g (tol %.3g)\n", c.name, d, kAttentionTol);
  EXPECT_TRUE(d <= kAttentionTol) << c.name << ": rel L2 " << d << ", seed " << seed;
}

TEST(CudaAttention, DecodeRowsMatchTheirDoubleEvaluation) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  // ratio 128: 128 raw + 3,000 compressed rows: 98 rounds, spans of 4 rounds (the online
  // softmax's rescales); three rows of one run at consecutive positions.
  run_case({"ratio 128, run of 3 rows", 128, 512, 128, 3000, {384000, 384001, 384002}, false});
  // ratio 4 past top_k: 128 raw + 512 of the 1,001 compressed rows, read through the picks.
  run_case({"ratio 4, indexer picks", 4, 512, 128, 1001, {4003}, false});
  // no compressed rows, a short window (position 40: 41 raw rows).
  run_case({"ratio 0, short window", 0, 512, 128, 1, {40}, false});
  // 20 consecutive rows: launch_attention's batch path (its dispatch to the flash kernel), each
  // row with its own 512 picks of ~1,000.
  std::vector<int> run20(20);
  for (int i = 0; i < 20; ++i) run20[static_cast<size_t>(i)] = 4003 + i;
  run_case({"ratio 4, batch of 20 rows", 4, 512, 128, 1010, run20, false});
  // one row in each of two sequences at different positions.
  run_case({"two sequences (ratio 128)", 128, 512, 128, 3000, {200000, 383999}, true});
  // one row in each of 20 sequences (16 or more: a step whose one-run scratch rule would give
  // none), each with its own picks.
  std::vector<int> seq20(20);
  for (int i = 0; i < 20; ++i) seq20[static_cast<size_t>(i)] = 4003 + 2 * i;
  run_case({"twenty sequences (ratio 4 picks)", 4, 512, 128, 1010, seq20, true});
}

TEST(CudaAttention, FlashBatchesMatchTheirDoubleEvaluation) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  // The f16 tensor-core kernel: rows that are f16 values (hi parts exact: two products), and
  // float rows (hi and lo: three products), over indexer picks, many compressed rows (a partial
  // last tile: 3,128 rows) and a window shorter than a tile.
  std::vector<int> run20(20);
  for (int i = 0; i < 20; ++i) run20[static_cast<size_t>(i)] = 4003 + i;
  run_case({"flash, f16 rows, ratio 4 picks", 4, 512, 128, 1010, run20, false, true, true});
  run_case({"flash, float rows, ratio 4 picks", 4, 512, 128, 1010, run20, false, true, false});
  run_case({"flash, float rows, ratio 128",
            128,
            512,
            128,
            3000,
            {384000, 384001, 384002},
            false,
            true,
            false});
  std::vector<int> early(17);
  for (int i = 0; i < 17; ++i) early[static_cast<size_t>(i)] = i;  // 1 to 17 raw rows
  run_case({"flash, f16 rows, first positions", 0, 512, 128, 1, early, false, true, true});
}

}  // namespace
}  // namespace ds4::backend::cuda
