// tools/imatrix/calibrate.h: `ds4-gguf imatrix` -- runs a model over a calibration corpus and
// accumulates the importance matrix of its routed experts (imatrix.h), resumably.
// The corpus: text files (each tokenized after BOS and cut into chunks of chunk_tokens tokens) and
// JSONL files of chat prompts (one per line: {"messages": [{"role", "content"}...]} rendered by
// the chat template, or {"prompt": TEXT} as one user turn; each line one chunk, cut to
// chunk_tokens). Each chunk runs in a fresh session.
// Owns: reading the corpus (a bad line refused with its file and number), its digest, the run with
// periodic saves, and resuming: an output file of the same model, corpus digest and chunk size is
// read and its chunks skipped.
#pragma once

#include <string>
#include <vector>

#include "ds4/engine.h"
#include "ds4/status.h"
#include "ds4/tokenizer.h"

namespace ds4::imatrix {

struct CalibrateOptions {
  std::string model;
  std::vector<std::string> text_files;
  std::vector<std::string> chat_files;  // JSONL
  std::string output;
  int chunk_tokens = 512;
  int save_every = 16;  // chunks between saves of the output
  int max_chunks = 0;   // stop after this many in all (0: the whole corpus); a later run resumes
  int threads = 0;
  BackendKind backend = BackendKind::kCpu;  // the observer reports on both (CUDA: slower steps)
  bool progress = false;
};

struct CalibrateReport {
  uint64_t chunks_total = 0;    // in the corpus
  uint64_t chunks_done = 0;     // in the output now
  uint64_t chunks_resumed = 0;  // of which an earlier run did
  uint64_t tokens = 0;          // evaluated by this run
  double seconds = 0;           // this run's
};

// The corpus's chunks (token ids, BOS first). Errors: no file, an unreadable one, a bad JSONL line,
// an empty corpus.
Result<std::vector<std::vector<TokenId>>> read_corpus(const Tokenizer& tok,
                                                      const CalibrateOptions& o);

Status calibrate(const CalibrateOptions& o, CalibrateReport* report = nullptr);

}  // namespace ds4::imatrix
