#include "eval/selftest.h"

#include <string>
#include <string_view>

#include "eval/extract.h"
#include "eval/trace.h"

namespace ds4::eval {
namespace {

Status expect(const char* what, std::string_view got, std::string_view want) {
  if (got == want) return Status::ok();
  return Status::internal("extractor self-test \"%s\": got \"%.*s\", expected \"%.*s\"", what,
                          static_cast<int>(got.size()), got.data(), static_cast<int>(want.size()),
                          want.data());
}

Status trace_blocks_copied_exactly() {
  std::string output("Answer: B\nMODEL_OUTPUT_END\n===== CASE 2/2 x/y =====\n");
  output.append("MODEL_OUTPUT_BEGIN bytes=3\n\n===== SUMMARY =====\n");
  output.push_back('\0');
  output.append("\xff\n");
  const TraceCase c{.index = 1,
                    .total = 2,
                    .source = "selftest",
                    .id = "fake-markers",
                    .status = "PASSED",
                    .picked = "B",
                    .expected = "B",
                    .system_prompt = "system\nMODEL_OUTPUT_END",
                    .question_prompt = "QUESTION_PROMPT_END\n",
                    .model_output = output};
  const std::string text = write_trace_header({{"model", "none"}}) + write_trace_case(c) +
                           write_trace_summary({1, 0, 1});
  const ParsedTrace t = read_trace(text);
  if (!t.errors.empty()) return Status::internal("extractor self-test: %s", t.errors[0].c_str());
  if (t.cases.size() != 1 || !(t.cases[0] == c) || !t.summary || t.summary->total != 1) {
    return Status::internal("extractor self-test: trace blocks with fake markers not copied back");
  }
  return Status::ok();
}

}  // namespace

Status run_extractor_self_tests() {
  DS4_TRY(trace_blocks_copied_exactly());
  DS4_TRY(expect("marker over later prose (choice)",
                 extract_choice("Answer: B\nOption C looks tempting, but D is wrong.", 4), "B"));
  DS4_TRY(expect("marker over later prose (integer)",
                 extract_integer("Answer: 42\nCheck: 6 times 7 is 42, not 41."), "42"));
  DS4_TRY(expect("last colon marker wins",
                 extract_choice("The answer: maybe A.\nFinal ANSWER : C", 4), "C"));
  DS4_TRY(
      expect("thinking stripped", extract_choice("<think>Answer: A</think>So, answer: D", 4), "D"));
  DS4_TRY(expect("loose choice fallback", extract_choice("B fails, so it must be C.", 4), "C"));
  DS4_TRY(expect("loose integer fallback", extract_integer("We get 12 and then 70 total."), "70"));
  DS4_TRY(expect("no answer", extract_choice("none of these", 4), "?"));
  DS4_TRY(expect("leading zeros", extract_integer("Answer: 007"), "7"));
  DS4_TRY(expect("all zeros", extract_integer("Answer: 000"), "0"));
  DS4_TRY(expect("line-set marker preference",
                 extract_lines("Line 3 is fine.\nAnswer: 12, 14-15\nSee also line 20."),
                 "12,14-15"));
  DS4_TRY(expect("line-set fallback", extract_lines("The bug is on line 9."), "9"));
  DS4_TRY(expect("safe function", extract_lines("Answer: 0"), "0"));
  return Status::ok();
}

}  // namespace ds4::eval
