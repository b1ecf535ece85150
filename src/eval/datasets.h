// src/eval/datasets.h: published benchmark files read in their own formats from a path the user
// gives (issue 52: nothing of them is copied into the project; docs/eval.md, "Datasets").
// Owns: the formats' parsing -- GPQA's CSV (RFC 4180: quoted fields with commas, doubled quotes
// and line breaks), SuperGPQA's and AIME's JSONL -- their mapping to Questions (source, id,
// domain, choices, answer) and their errors, each naming the record's 1-based line.
// Does not own: the project's own JSONL format (question.h), prompting or grading.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ds4/status.h"
#include "eval/question.h"

namespace ds4::eval {

enum class DatasetFormat {
  kDs4,        // the project's JSONL (question.h)
  kGpqa,       // GPQA's CSV: Question, Correct Answer, Incorrect Answer 1-3, Record ID, ...
  kSuperGpqa,  // SuperGPQA's JSONL: uuid, question, options, answer_letter, discipline, field
  kAime,       // AIME's JSONL: problem (or question), answer (an integer), id (optional)
};

// "ds4", "gpqa", "supergpqa" or "aime"; errors name the four.
Result<DatasetFormat> dataset_format(std::string_view name);

// A CSV file's records (RFC 4180; CRLF or LF), with the 1-based line each record starts on.
struct CsvRecord {
  int line = 0;
  std::vector<std::string> fields;
};
Result<std::vector<CsvRecord>> parse_csv(std::string_view text);

// Parses `text` in `format`. GPQA's four answers are shuffled into choices A-D by a fixed
// permutation of each record's id, so a file gives the same questions on every run and machine.
Result<std::vector<Question>> parse_dataset(std::string_view text, DatasetFormat format);
Result<std::vector<Question>> load_dataset(const std::string& path, DatasetFormat format);

}  // namespace ds4::eval
