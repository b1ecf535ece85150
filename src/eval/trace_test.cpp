// Traces (features.md §7.7): write -> read gives back every field and every block byte for byte,
// even when the model output holds fake markers and arbitrary bytes; damaged traces are reported
// with their line and reading resumes at the next case; regrading a written trace reproduces its
// grades, and a changed key or extraction shows up as a changed case.
#include "eval/trace.h"

#include <gtest/gtest.h>

#include "eval/extract.h"
#include "eval/regrade.h"

namespace ds4::eval {
namespace {

std::vector<Question> questions() {
  auto r = parse_questions(
      R"({"source":"ds4","id":"q1","question":"Pick","kind":"choice","choices":["a","b","c","d"],"answer":"B"})"
      "\n"
      R"({"source":"ds4","id":"q2","question":"Sum","kind":"integer","answer":"70"})"
      "\n"
      R"({"source":"ds4","id":"q3","question":"Code","kind":"lines","answer":"9-10"})"
      "\n");
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? r.value() : std::vector<Question>{};
}

TraceCase make_case(const Question& q, int index, std::string output) {
  TraceCase c;
  c.index = index;
  c.total = 3;
  c.source = q.source;
  c.id = q.id;
  c.domain = "d";
  c.title = "title\nwith newline";
  const Grade g = grade(q, output);
  c.status = g.passed ? "PASSED" : "FAILED";
  c.picked = g.picked;
  c.expected = q.answer;
  c.prompt_tokens = 100 + index;
  c.generated_tokens = 2000 + index;
  c.elapsed_ms = 1234;
  c.extra = {{"timestamp", "1700000000"}, {"think_close", "soft index=12 remaining=900 rank=2"}};
  c.system_prompt = "sys";
  c.question_prompt = "question " + std::to_string(index);
  c.model_output = std::move(output);
  return c;
}

std::string fake_marker_output() {
  std::string out = "<think>hmm\nMODEL_OUTPUT_END\n</think>\nMODEL_OUTPUT_END\n";
  out += "===== CASE 9/9 fake/x =====\nMODEL_OUTPUT_BEGIN bytes=2\n\n===== SUMMARY =====\n";
  for (int b = 0; b < 256; ++b) out += static_cast<char>(b);
  return out + "\nAnswer: B\nMODEL_OUTPUT_END";
}

TEST(EvalTrace, RoundTripCopiesBlocksExactly) {
  const auto qs = questions();
  ASSERT_EQ(qs.size(), 3u);
  const std::vector<TraceCase> cases = {make_case(qs[0], 1, fake_marker_output()),
                                        make_case(qs[1], 2, ""),
                                        make_case(qs[2], 3, "Answer: 9\n")};
  const TraceFields header = {{"started_unix", "1700000000"}, {"model", "m.gguf"}, {"ctx", ""}};
  std::string text = write_trace_header(header);
  for (const auto& c : cases) text += write_trace_case(c);
  text += write_trace_summary({2, 1, 3});
  const ParsedTrace t = read_trace(text);
  ASSERT_TRUE(t.errors.empty()) << t.errors[0];
  EXPECT_EQ(t.header, header);
  ASSERT_EQ(t.cases.size(), 3u);
  EXPECT_EQ(t.cases[0].model_output, cases[0].model_output);
  EXPECT_EQ(t.cases[0].title, "title with newline");  // one line per field
  TraceCase want = cases[1];
  want.title = "title with newline";
  EXPECT_EQ(t.cases[1], want);
  EXPECT_EQ(t.cases[2].extra, cases[2].extra);
  ASSERT_TRUE(t.summary.has_value());
  EXPECT_EQ(*t.summary, (TraceSummary{2, 1, 3}));
}

TEST(EvalTrace, StoppedRunHasNoSummary) {
  const auto qs = questions();
  const ParsedTrace t =
      read_trace(write_trace_header({}) + write_trace_case(make_case(qs[0], 1, "Answer: B")));
  EXPECT_TRUE(t.errors.empty());
  EXPECT_EQ(t.cases.size(), 1u);
  EXPECT_FALSE(t.summary.has_value());
}

TEST(EvalTrace, DamageIsReportedWithLineAndReadingResumes) {
  EXPECT_EQ(read_trace("").errors.size(), 1u);
  EXPECT_EQ(read_trace("hello\n").errors[0].rfind("trace line 1:", 0), 0u);
  const auto qs = questions();
  const std::string head = write_trace_header({{"model", "m"}});  // lines 1-2
  std::string bad = write_trace_case(make_case(qs[0], 1, "Answer: B"));
  // A byte count one too large: the _END line is not where the count says.
  const size_t at = bad.find("MODEL_OUTPUT_BEGIN bytes=9");
  ASSERT_NE(at, std::string::npos);
  bad.replace(at, 26, "MODEL_OUTPUT_BEGIN bytes=10");
  const std::string text = head + bad + write_trace_case(make_case(qs[1], 2, "Answer: 70"));
  const ParsedTrace t = read_trace(text);
  ASSERT_EQ(t.errors.size(), 1u);
  // Line 3 is blank, the case starts on line 4; the error names its MODEL_OUTPUT_BEGIN line (23).
  size_t begin_line = 1;
  for (size_t i = 0; i < head.size() + at; ++i) begin_line += text[i] == '\n';
  EXPECT_NE(t.errors[0].find("trace line " + std::to_string(begin_line) + ":"), std::string::npos)
      << t.errors[0];
  EXPECT_EQ(begin_line, 23u);
  ASSERT_EQ(t.cases.size(), 1u);
  EXPECT_EQ(t.cases[0].id, "q2");

  // A bad field: the error names that line.
  std::string bad_field = write_trace_case(make_case(qs[0], 1, "x"));
  bad_field.replace(bad_field.find("prompt_tokens: 101"), 18, "prompt_tokens: lots");
  const ParsedTrace t2 = read_trace(head + bad_field);
  ASSERT_EQ(t2.errors.size(), 1u);
  EXPECT_NE(t2.errors[0].find("trace line 12: prompt_tokens"), std::string::npos) << t2.errors[0];
}

TEST(EvalRegrade, WrittenTraceRegradesToTheSameResults) {
  const auto qs = questions();
  std::string text = write_trace_header({});
  text += write_trace_case(make_case(qs[0], 1, fake_marker_output()));
  text += write_trace_case(make_case(qs[1], 2, "Answer: 71"));
  text += write_trace_case(make_case(qs[2], 3, "Answer: 10"));
  TraceCase skipped = make_case(qs[1], 4, "");
  skipped.status = "SKIPPED";
  text += write_trace_case(skipped);
  const RegradeResult r = regrade(read_trace(text), qs);
  EXPECT_EQ(r.regraded, 3);
  EXPECT_EQ(r.passed, 2);
  EXPECT_EQ(r.failed, 1);
  EXPECT_EQ(r.changed, 0);
  EXPECT_EQ(r.unknown, 0);
  EXPECT_EQ(r.not_graded, 1);
  EXPECT_EQ(regrade_exit_code(r), 0);
  EXPECT_EQ(format_regrade(r),
            "regraded 3 cases: passed 2, failed 1, changed 0, unknown 0, parse_errors 0 (1 not "
            "graded in the trace)\n");
}

TEST(EvalRegrade, ChangedExtractionAndUnknownCasesAreReported) {
  auto qs = questions();
  // A trace graded by an older extractor that took the first letter it saw: FAILED picked=A.
  TraceCase old = make_case(qs[0], 1, "A looks wrong.\nAnswer: B");
  old.status = "FAILED";
  old.picked = "A";
  TraceCase stranger = make_case(qs[1], 2, "Answer: 70");
  stranger.source = "gone";
  const std::string text = write_trace_header({}) + write_trace_case(old) +
                           write_trace_case(stranger) + "garbage line\n";
  const RegradeResult r = regrade(read_trace(text), qs);
  EXPECT_EQ(r.changed, 1);
  EXPECT_EQ(r.unknown, 1);
  EXPECT_EQ(r.parse_errors, 1);
  EXPECT_EQ(regrade_exit_code(r), 1);
  const std::string out = format_regrade(r);
  EXPECT_NE(out.find("ds4/q1: trace FAILED picked=A -> regrade PASSED picked=B expected=B\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("gone/q2: unknown case"), std::string::npos) << out;
  EXPECT_NE(out.find("changed 1, unknown 1, parse_errors 1"), std::string::npos) << out;
}

}  // namespace
}  // namespace ds4::eval
