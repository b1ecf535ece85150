// tools/imatrix/imatrix.h: importance matrices for the routed experts (issue 53): per layer, expert
// and input column, the sum of squared activations that reached the expert and the number of rows
// that did -- for the gate and up projections (their shared input) and for the down projection.
// `ds4-gguf quantize --imatrix` weighs each column's error by the mean square.
// Owns: the accumulator (an engine Observer), merging, and the side file: a GGUF holding, per
// layer N, F64 tensors blk.N.ffn_gate_up_exps.sum_sq [n_embd, n_expert] and .rows [n_expert],
// blk.N.ffn_down_exps.sum_sq [n_ff, n_expert] and .rows [n_expert], and dwarfstar.imatrix.* keys
// (the model's fingerprint and dimensions, the calibration input's digest, the chunks done).
// Does not own: running the engine over text (calibrate.h), the encoders (quant/).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ds4/observer.h"
#include "ds4/status.h"
#include "model/shape.h"

namespace ds4::imatrix {

struct Dims {
  int n_layer = 0, n_expert = 0;
  int64_t n_embd = 0, n_ff = 0;
  bool operator==(const Dims&) const = default;
};

// A model shape's routed-expert dimensions.
inline Dims dims_of(const model::Shape& s) {
  return {.n_layer = s.n_layer, .n_expert = s.n_expert, .n_embd = s.n_embd, .n_ff = s.n_ff_exp};
}

struct Imatrix {
  Dims dims;
  std::string fingerprint;  // the model file's (ModelInfo::fingerprint)
  std::string dataset;      // digest of the calibration chunks' tokens ("merged" after a merge)
  int chunk_tokens = 0;     // tokens per calibration chunk
  uint64_t chunks = 0;      // calibration chunks accumulated (where a resumed run goes on)
  // [layer][expert][column], [layer][expert].
  std::vector<double> in_sum_sq, in_rows, down_sum_sq, down_rows;

  static Imatrix empty(const Dims& dims);
  // The importance of each input column for one expert matrix (`down`: the down projection, else
  // gate and up): the mean square of what reached it; nullopt when no row did (uniform weights).
  std::optional<std::vector<float>> importance(int layer, int expert, bool down) const;
};

// An engine observer that adds every pass's expert inputs to `into` (layers beyond dims.n_layer,
// the MTP block's, are left out).
class Collector : public Observer {
 public:
  explicit Collector(Imatrix* into) : m_(into) {}
  void on_expert_inputs(const ExpertInputs& x) override;

 private:
  Imatrix* m_;
};

// a += b: same dimensions and model fingerprint, else kInvalidArgument.
Status merge(Imatrix& a, const Imatrix& b);

// The side file, written as PATH.partial and renamed (an interrupted save leaves the last one).
Status write_imatrix(const Imatrix& m, const std::string& path);
// Reads and checks it (keys, tensor types and sizes, finite non-negative values).
Result<Imatrix> read_imatrix(const std::string& path);
// The same, for a model of `shape`: a matrix of other dimensions is refused (kInvalidArgument).
Result<Imatrix> read_imatrix(const std::string& path, const model::Shape& shape);

}  // namespace ds4::imatrix
