// src/backend/cpu/cpu_backend.h: the CPU backend -- the reference implementation of every op.
// Owns: its thread pool, the per-sequence state in host memory, and op scratch (grown, never
// shrunk, so the per-token path does not allocate once warm).
// Does not own: the weights (views into the mapped model file).
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/row_undo.h"
#include "base/thread_pool.h"
#include "quant/dot.h"

namespace ds4::backend::cpu {

// One layer's state: raw window ring, compressed rows, compressor frontiers (model.md §5.1).
struct LayerCache {
  LayerLayout lay;
  std::vector<float> raw;  // raw_cap rows, ring
  int raw_head = 0;        // ring slot of the oldest live row
  int n_raw = 0;
  std::vector<float> comp;  // comp_cap rows
  int n_comp = 0;
  std::vector<float> comp_kv, comp_score;  // frontier [R][W]
  std::vector<float> index;                // comp_cap rows of 128
  int n_index = 0;
  std::vector<float> index_kv, index_score;  // frontier [8][256]
  int n_tokens = 0;                          // tokens this layer has consumed
  // While the sequence is marked (mark_sequence): what each row since the mark changed.
  bool logging = false;
  std::vector<RowUndo> undo;
};

struct Sequence {
  SequenceLayout layout;
  std::vector<LayerCache> layers;
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options);
  std::string_view name() const override { return "cpu"; }
  Result<Weight> upload(const Weight& host) override { return host; }
  std::unique_ptr<Buffer> alloc(int64_t n_floats) override;

  Status create_sequence(int seq, const SequenceLayout& layout) override;
  void drop_sequence(int seq) override;
  void reset_sequence(int seq) override;
  Result<std::vector<LayerState>> export_sequence(int seq) const override;
  Status import_sequence(int seq, const std::vector<LayerState>& state) override;
  Status export_sequence_into(int seq, std::span<uint8_t> out,
                              const std::function<void(size_t)>& done) const override;
  Status import_sequence_view(int seq, std::span<const LayerStateView> state) override;
  Status mark_sequence(int seq) override;
  Status rewind_sequence(int seq, int n_tokens) override;
  void settle_sequence(int seq) override;
  // Sequences live in host memory: the kernel's MemAvailable.
  std::optional<uint64_t> free_memory_bytes() const override;
  Status set_observer(Observer* observer) override {
    observer_ = observer;
    return Status::ok();
  }

  int threads() const { return pool_.size(); }

 protected:
  void do_embed(const Weight& table, std::span<const RowTag> rows, Act out) override;
  void do_rms_norm(Act x, const Weight* weight, int64_t segment, Act y) override;
  void do_matmul(const Weight& w, Act x, Act y, int groups) override;
  void do_hc_pre(const HcWeights& hc, Act x, Act cur, Act mix, const Weight* norm,
                 Act normed) override;
  void do_hc_post(Act x, Act f, Act mix, Act y) override;
  void do_add(Act a, Act b, Act y) override;
  void do_copy(Act src, Act dst) override;
  void do_attention(int il, const AttentionLayer& layer, std::span<const RowTag> rows,
                    const AttentionInputs& in, Act out) override;
  void do_moe(const MoeLayer& layer, std::span<const RowTag> rows, Act n, Act out) override;
  void do_output_head(const OutputHead& head, Act x, std::span<const int> which,
                      Act logits) override;
  void do_steer(const Weight& direction, std::span<const RowTag> rows, Sublayer which,
                Act y) override;
  void do_report_sublayer(int layer, Sublayer which, std::span<const RowTag> rows, Act y) override;
  void do_download(Act src, float* host) override;
  void do_upload_act(const float* host, Act dst) override;

 private:
  Observer* observer_ = nullptr;  // not owned (EngineOptions::observer)
  Sequence& sequence(int seq);
  // Attention pieces (attention.cpp).
  void attend_row(const AttentionLayer& l, LayerCache& c, const RowTag& row,
                  const AttentionInputs& in, int64_t r, float* out);
  void indexer_select(const AttentionLayer& l, LayerCache& c, const RowTag& row,
                      const AttentionInputs& in, int64_t r);
  // MoE (moe.cpp): the slots of a batch in expert order, slot order within an expert.
  const int32_t* slots_by_expert(const int32_t* sel, int64_t slots, int64_t n_exp);

  base::ThreadPool pool_;
  const quant::DotKernels& k_;
  std::map<int, std::unique_ptr<Sequence>> seqs_;
  // Scratch.
  EncodedRows enc_, enc2_;
  std::vector<float> f_scratch_, scores_, index_scores_;
  std::vector<int32_t> index_order_;
  std::vector<uint8_t> index_visible_;
  std::vector<float> moe_scratch_, head_scratch_;
  std::vector<int32_t> visible_;
  std::vector<int32_t> moe_sel_;
  std::vector<int32_t> moe_order_;  // slots sorted by expert
  std::vector<int64_t> moe_count_;
};

Backend* make_cpu_backend(const BackendOptions& options);

}  // namespace ds4::backend::cpu
