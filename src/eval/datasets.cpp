// src/eval/datasets.cpp: see datasets.h.
#include "eval/datasets.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/utf8.h"

namespace ds4::eval {
namespace {

using nlohmann::json;

Status record_error(std::string_view format, int line, const std::string& what) {
  return Status::invalid_argument("%.*s line %d: %s", static_cast<int>(format.size()),
                                  format.data(), line, what.c_str());
}

// An id in the question files' alphabet (A-Z a-z 0-9 . _ -, at most 64 characters).
std::string clean_id(std::string_view raw, int line) {
  std::string id;
  for (const char c : raw) {
    if (id.size() == 64) break;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    id += ok ? c : '_';
  }
  return id.empty() ? "line" + std::to_string(line) : id;
}

// FNV-1a of the id, then xorshift steps: the same permutation of the four GPQA answers for a
// record wherever and whenever the file is read.
uint64_t id_hash(std::string_view id) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : id) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

// Validates q and appends it; the error says what is wrong (the caller adds where).
Status add_question(Question q, std::vector<Question>* out) {
  auto answer = normalize_answer(q.kind, q.answer, q.choices.size());
  if (!answer.is_ok()) return answer.status();
  q.answer = *answer;
  if (q.question.empty()) return Status::invalid_argument("the question is empty");
  if (q.kind == AnswerKind::kChoice && (q.choices.size() < 2 || q.choices.size() > kMaxChoices)) {
    return Status::invalid_argument("%zu choices (2 to 10 are read)", q.choices.size());
  }
  if (find_question(*out, q.key()) != nullptr) {
    return Status::invalid_argument("id '%s' appears twice", q.id.c_str());
  }
  if (out->size() >= kMaxQuestions) return Status::invalid_argument("too many questions");
  out->push_back(std::move(q));
  return Status::ok();
}

// The value of `key` as text (strings as they are, numbers in decimal), or "".
std::string text_of(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<long long>());
  return "";
}

// The JSONL formats, one object per line; blank lines skipped.
Result<std::vector<Question>> parse_jsonl(std::string_view text, DatasetFormat format) {
  const std::string_view name = format == DatasetFormat::kAime ? "aime" : "supergpqa";
  std::vector<Question> out;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? text.size() - pos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (line.size() > kMaxQuestionLineBytes) {
      return record_error(name, line_no,
                          "over " + std::to_string(kMaxQuestionLineBytes) + " bytes");
    }
    const json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      return record_error(name, line_no, "not a JSON object");
    }
    Question q;
    q.source = std::string(name);
    if (format == DatasetFormat::kAime) {
      q.id = clean_id(text_of(j, "id"), line_no);
      q.question = !text_of(j, "problem").empty() ? text_of(j, "problem") : text_of(j, "question");
      q.kind = AnswerKind::kInteger;
      q.answer = text_of(j, "answer");
      q.domain = "competition math";
      q.title = "AIME " + q.id;
    } else {
      q.id = clean_id(text_of(j, "uuid"), line_no);
      q.question = text_of(j, "question");
      q.kind = AnswerKind::kChoice;
      q.answer = text_of(j, "answer_letter");
      q.domain = text_of(j, "discipline");
      q.title =
          text_of(j, "field") + (j.contains("subfield") ? " / " + text_of(j, "subfield") : "");
      const auto opts = j.find("options");
      if (opts == j.end() || !opts->is_array()) {
        return record_error(name, line_no, "no \"options\" list");
      }
      for (const json& o : *opts) {
        if (!o.is_string()) return record_error(name, line_no, "an option is not a string");
        q.choices.push_back(o.get<std::string>());
      }
    }
    if (q.answer.empty()) return record_error(name, line_no, "no answer");
    const Status st = add_question(std::move(q), &out);
    if (!st.is_ok()) return record_error(name, line_no, st.message());
  }
  if (out.empty())
    return Status::invalid_argument("%.*s: no questions", int(name.size()), name.data());
  return out;
}

Result<std::vector<Question>> parse_gpqa(std::string_view text) {
  DS4_ASSIGN_OR_RETURN(std::vector<CsvRecord> rows, parse_csv(text));
  if (rows.empty()) return Status::invalid_argument("gpqa: the file is empty");
  const std::vector<std::string>& head = rows[0].fields;
  const auto column = [&](std::string_view name) -> int {
    const auto it = std::find(head.begin(), head.end(), name);
    return it == head.end() ? -1 : static_cast<int>(it - head.begin());
  };
  const int question = column("Question"), correct = column("Correct Answer");
  const int wrong[3] = {column("Incorrect Answer 1"), column("Incorrect Answer 2"),
                        column("Incorrect Answer 3")};
  const int id = column("Record ID"), domain = column("High-level domain"),
            sub = column("Subdomain");
  if (question < 0 || correct < 0 || wrong[0] < 0 || wrong[1] < 0 || wrong[2] < 0) {
    return record_error("gpqa", 1,
                        "the header lacks Question, Correct Answer or Incorrect Answer 1-3");
  }
  std::vector<Question> out;
  for (size_t r = 1; r < rows.size(); ++r) {
    const CsvRecord& row = rows[r];
    const auto field = [&](int c) -> std::string {
      return c >= 0 && static_cast<size_t>(c) < row.fields.size() ? row.fields[size_t(c)] : "";
    };
    if (row.fields.size() == 1 && row.fields[0].empty()) continue;  // a blank line
    if (row.fields.size() != head.size()) {
      return record_error("gpqa", row.line,
                          std::to_string(row.fields.size()) + " fields, the header has " +
                              std::to_string(head.size()));
    }
    Question q;
    q.source = "gpqa";
    q.id = clean_id(field(id), row.line);
    q.domain = field(domain);
    q.title = field(sub);
    q.question = field(question);
    q.kind = AnswerKind::kChoice;
    std::vector<std::string> answers{field(correct), field(wrong[0]), field(wrong[1]),
                                     field(wrong[2])};
    for (const std::string& a : answers) {
      if (a.empty()) return record_error("gpqa", row.line, "an answer is empty");
    }
    // A fixed shuffle of the four, from the record's id.
    uint64_t h = id_hash(q.id);
    std::vector<int> order{0, 1, 2, 3};
    for (int k = 3; k > 0; --k) {
      h ^= h >> 12, h ^= h << 25, h ^= h >> 27;
      std::swap(order[size_t(k)], order[size_t((h * 0x2545F4914F6CDD1Dull >> 33) % (k + 1))]);
    }
    for (size_t k = 0; k < 4; ++k) {
      q.choices.push_back(answers[size_t(order[k])]);
      if (order[k] == 0) q.answer = std::string(1, static_cast<char>('A' + k));
    }
    const Status st = add_question(std::move(q), &out);
    if (!st.is_ok()) return record_error("gpqa", row.line, st.message());
  }
  if (out.empty()) return Status::invalid_argument("gpqa: no questions");
  return out;
}

}  // namespace

Result<DatasetFormat> dataset_format(std::string_view name) {
  if (name == "ds4") return DatasetFormat::kDs4;
  if (name == "gpqa") return DatasetFormat::kGpqa;
  if (name == "supergpqa") return DatasetFormat::kSuperGpqa;
  if (name == "aime") return DatasetFormat::kAime;
  return Status::invalid_argument("unknown question format '%.*s' (ds4, gpqa, supergpqa or aime)",
                                  static_cast<int>(name.size()), name.data());
}

Result<std::vector<CsvRecord>> parse_csv(std::string_view text) {
  if (!base::is_valid_utf8(text)) return Status::invalid_argument("csv: invalid UTF-8");
  std::vector<CsvRecord> out;
  CsvRecord rec{.line = 1, .fields = {""}};
  int line = 1;
  bool quoted = false, was_quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    std::string& f = rec.fields.back();
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        f += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        f += c;
      }
      if (f.size() > kMaxQuestionLineBytes) {
        return record_error("csv", rec.line,
                            "a field over " + std::to_string(kMaxQuestionLineBytes) + " bytes");
      }
      continue;
    }
    if (c == '"' && f.empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else if (c == '"') {
      return record_error("csv", line, "a quote inside an unquoted field");
    } else if (c == ',') {
      rec.fields.emplace_back();
      was_quoted = false;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      out.push_back(std::move(rec));
      rec = CsvRecord{.line = ++line, .fields = {""}};
      was_quoted = false;
    } else if (was_quoted) {
      return record_error("csv", line, "text after a closing quote");
    } else {
      f += c;
    }
  }
  if (quoted) return record_error("csv", rec.line, "a quoted field is not closed");
  if (!(rec.fields.size() == 1 && rec.fields[0].empty())) out.push_back(std::move(rec));
  return out;
}

Result<std::vector<Question>> parse_dataset(std::string_view text, DatasetFormat format) {
  switch (format) {
    case DatasetFormat::kDs4: return parse_questions(text);
    case DatasetFormat::kGpqa: return parse_gpqa(text);
    case DatasetFormat::kSuperGpqa:
    case DatasetFormat::kAime: return parse_jsonl(text, format);
  }
  return Status::invalid_argument("unknown question format");
}

Result<std::vector<Question>> load_dataset(const std::string& path, DatasetFormat format) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found("question file %s cannot be opened", path.c_str());
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return Status::io_error("reading question file %s failed", path.c_str());
  auto r = parse_dataset(buf.str(), format);
  if (!r.is_ok()) return r.status().with_context(path);
  return r;
}

}  // namespace ds4::eval
