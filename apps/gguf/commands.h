// apps/gguf/commands.h: the ds4-gguf subcommands. Each returns the process exit code:
// 0 success, 1 the input was bad or an operation failed (one line on stderr), 2 usage error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ds4/status.h"
#include "model/inventory.h"
#include "model/shape.h"

namespace ds4::apps::gguf_tool {

// The built-in shape / quantisation recipe a subcommand names on its command line. When the name is
// unknown they print the one-line usage error "ds4-gguf CMD: unknown ..." and return nothing (the
// caller exits 2).
std::optional<model::Shape> shape_arg(const char* cmd, const std::string& name);
std::optional<model::Recipe> recipe_arg(const char* cmd, const std::string& name);

struct InfoOptions {
  std::string path;
  int max_array_items = 8;  // arrays longer than this are abbreviated
  bool all_tensors = true;
};

int run_info(const InfoOptions& opts);

struct VocabOptions {
  std::string tokenizer_json;
  std::string output;
  int n_vocab = 129280;  // DeepSeek V4's vocabulary size
};

int run_vocab(const VocabOptions& opts);

struct TokenizeOptions {
  std::string path;        // model or vocabulary GGUF
  std::string chat = "";   // "", "none", "high" or "max": render stdin as one user turn
  bool pieces = false;     // print vocabulary pieces instead of ids
  bool text_only = false;  // treat special-token text as ordinary text
};

struct CheckOptions {
  std::string path;
};
int run_check(const CheckOptions& opts);

struct SynthCmdOptions {
  std::string shape = "tiny";
  std::string quant = "q2";
  uint64_t seed = 0;
  std::string vocab;
  std::string output;
  bool mtp = false;
  int threads = 0;
  std::string hf_dir;  // instead of a GGUF: the f32 weights as a Hugging Face checkpoint directory
  bool decisive_routing = false;
  bool decisive = false;  // routing, indexer and sampling
  int branch_shift = -1;  // -1: the decisive law's default
  int n_layer = 0;        // 0: the shape's own; else its first n_layer layers as a test shape
};
int run_synth(const SynthCmdOptions& opts);

struct SplitCmdOptions {
  std::string layers;  // "A:B" or "A:output" (features.md §10.2)
  std::string output;
  std::string input;
};
int run_split(const SplitCmdOptions& opts);

struct QuantizeCmdOptions {
  std::string input;
  std::string output;
  std::string imatrix;
  std::string quant = "q2";  // q2, q4 or q8 (the routed experts)
  int q4_last = 0;
  int threads = 0;
  bool progress = false;
};
int run_quantize(const QuantizeCmdOptions& opts);

struct SpliceCmdOptions {
  std::vector<std::string> inputs;
  std::string output;
};
int run_splice(const SpliceCmdOptions& opts);

struct QualityCmdOptions {
  std::string model;
  std::string vectors;  // the recorded continuations (vectors.h format)
  std::string csv;      // also write the table here
  std::string record;   // instead of scoring: record the model's own continuations here
  int steps = 0;        // --record: tokens per case (0: the case's own step count)
  int top = 20;         // --record: alternatives per step
  int threads = 0;
};
int run_quality(const QualityCmdOptions& opts);

struct ImatrixCmdOptions {
  std::string model;
  std::vector<std::string> text, chat, merge;
  std::string output;
  int chunk = 512;
  int save_every = 16;
  int max_chunks = 0;
  int threads = 0;
  std::string backend = "cpu";
  bool progress = false;
};
int run_imatrix(const ImatrixCmdOptions& opts);

struct TrafficOptions {
  std::string shape = "flash";
  std::string quant = "q2";
  std::vector<int64_t> contexts{2048, 8192, 32768, 131072};
  double gbps = 0;  // memory bandwidth for a roofline column (0: none)
};
int run_traffic(const TrafficOptions& opts);

// Renders `text` as a single user turn with the given thinking mode ("none", "high", "max").
Result<std::string> render_user_turn(const std::string& text, const std::string& think);

int run_tokenize(const TokenizeOptions& opts);

}  // namespace ds4::apps::gguf_tool
