// The drift gate (features.md §7.8) and the report (§7.5): a baseline written from results reads
// back equal and compares clean against the same run; every drift (status, answer, token count,
// missing and new cases) is named with its token delta; the report's line and table.
#include "eval/baseline.h"

#include <gtest/gtest.h>

#include "eval/report.h"

namespace ds4::eval {
namespace {

std::vector<CaseResult> run_results() {
  return {{1, "ds4/q1", "PASSED", 120, 2048, "B", "B"},
          {2, "ds4/q2", "PASSED", 95, 438, "C", "C"},
          {3, "ds4/q3", "PASSED", 88, 666, "70", "70"},
          {4, "ds4/q4", "FAILED", 140, 2048, "A", "C"}};
}

TEST(EvalBaseline, WriteReadCompareWithoutDrift) {
  const auto entries = baseline_from_results(run_results());
  const std::string text = write_baseline(entries);
  EXPECT_EQ(text.substr(0, text.find('\n')), kBaselineMagic);
  EXPECT_NE(text.find("ds4/q3\tPASSED\t70\t666\n"), std::string::npos);
  auto back = parse_baseline(text);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(*back, entries);
  const DriftReport d = compare_baseline(*back, entries);
  EXPECT_TRUE(d.passed);
  EXPECT_TRUE(d.drifts.empty());
  EXPECT_EQ(format_drift(d), "baseline: no drift\n");
}

TEST(EvalBaseline, DriftNamedWithTokenDelta) {
  const auto base = baseline_from_results(run_results());
  auto now = run_results();
  now[2].generated_tokens = 670;  // q3: +4 tokens
  now[3].state = "PASSED";        // q4: status and answer
  now[3].given = "C";
  now[3].generated_tokens = 2000;
  now.erase(now.begin() + 1);                              // q2 missing
  now.push_back({5, "ds4/q5", "PASSED", 1, 1, "D", "D"});  // new
  const DriftReport d = compare_baseline(base, baseline_from_results(now));
  EXPECT_FALSE(d.passed);
  ASSERT_EQ(d.drifts.size(), 6u);
  EXPECT_EQ(d.drifts[0].kind, DriftKind::kMissing);
  EXPECT_EQ(d.drifts[1].kind, DriftKind::kTokens);
  EXPECT_EQ(d.drifts[1].token_delta, 4);
  EXPECT_EQ(d.drifts[4].kind, DriftKind::kTokens);
  EXPECT_EQ(d.drifts[4].token_delta, -48);
  EXPECT_EQ(format_drift(d),
            "ds4/q2: in the baseline (PASSED), not in this run\n"
            "ds4/q3: tokens 666 -> 670 (+4)\n"
            "ds4/q4: status FAILED -> PASSED (tokens -48)\n"
            "ds4/q4: answer A -> C (tokens -48)\n"
            "ds4/q4: tokens 2048 -> 2000 (-48)\n"
            "ds4/q5: not in the baseline (PASSED in this run)\n"
            "baseline: DRIFT in 6 item(s)\n");
  // Within a tolerance the token counts do not drift.
  const DriftReport tol =
      compare_baseline(base, baseline_from_results(run_results()), {.token_tolerance = 0});
  EXPECT_TRUE(tol.passed);
  auto near = run_results();
  near[0].generated_tokens = 2050;
  EXPECT_TRUE(compare_baseline(base, baseline_from_results(near), {.token_tolerance = 2}).passed);
  EXPECT_FALSE(compare_baseline(base, baseline_from_results(near), {.token_tolerance = 1}).passed);
}

TEST(EvalBaseline, HostileBaselinesNameTheLine) {
  const std::string head = std::string(kBaselineMagic) + "\n";
  auto msg = [](const std::string& text) {
    auto r = parse_baseline(text);
    EXPECT_FALSE(r.is_ok());
    return r.is_ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(msg("").find("baseline line 1:"), std::string::npos);
  EXPECT_NE(msg("something else\n").find("baseline line 1:"), std::string::npos);
  EXPECT_NE(msg(head + "a\tPASSED\tB\n").find("baseline line 2: 3 tab-separated"),
            std::string::npos);
  EXPECT_NE(msg(head + "# c\na\tPASSED\tB\tx\n").find("baseline line 3: generated_tokens \"x\""),
            std::string::npos);
  EXPECT_NE(msg(head + "a\tPASSED\tB\t1\na\tPASSED\tB\t1\n").find("line 3: duplicate case a"),
            std::string::npos);
  EXPECT_NE(msg(head + "a\t\tB\t1\n").find("line 2: an empty field"), std::string::npos);
}

TEST(EvalReport, LineAndTable) {
  const std::string r = format_report(run_results(), 83.44);
  EXPECT_EQ(r,
            "ds4-eval: 3/4 passed, 1 failed, runtime 1m23s (83.4 s)\n"
            "#  state   prompt  gen   total  given  correct  test\n"
            "1  PASSED  120     2048  2168   B      B        ds4/q1\n"
            "2  PASSED  95      438   533    C      C        ds4/q2\n"
            "3  PASSED  88      666   754    70     70       ds4/q3\n"
            "4  FAILED  140     2048  2188   A      C        ds4/q4\n");
  EXPECT_EQ(report_exit_code(run_results()), 1);
  auto ok = run_results();
  ok.pop_back();
  ok.push_back({4, "ds4/q4", "SKIPPED", 0, 0, "", "C"});
  EXPECT_EQ(report_exit_code(ok), 0);
  EXPECT_EQ(format_report(ok, 2).substr(0, 42), "ds4-eval: 3/4 passed, runtime 2.0 s\n#  sta");
}

}  // namespace
}  // namespace ds4::eval
