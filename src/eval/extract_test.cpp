// Answer extraction and grading (features.md §7.4): the marker rule (last "answer:" word, else
// the first "answer"), the 96/160-byte windows, the loose fallbacks, leading zeros, line sets
// with ranges, thinking stripped; plus the prompt text and the built-in self-tests.
#include "eval/extract.h"

#include <gtest/gtest.h>

#include "eval/prompt.h"
#include "eval/selftest.h"

namespace ds4::eval {
namespace {

Question choice_q(std::string answer, size_t n = 4) {
  Question q;
  q.source = "t";
  q.id = "c";
  q.kind = AnswerKind::kChoice;
  for (size_t i = 0; i < n; ++i) q.choices.push_back("choice " + std::to_string(i));
  q.answer = std::move(answer);
  return q;
}

Question lines_q(std::string answer) {
  Question q;
  q.kind = AnswerKind::kLineSet;
  q.answer = std::move(answer);
  return q;
}

TEST(EvalExtract, VisiblePartStartsAfterFirstThinkEnd) {
  EXPECT_EQ(visible_part("abc</think>def</think>g"), "def</think>g");
  EXPECT_EQ(visible_part("no thinking"), "no thinking");
  EXPECT_EQ(extract_choice("<think>Answer: A</think>Answer: C", 4), "C");
  EXPECT_EQ(extract_integer("<think>Answer: 5</think>nothing here"), "?");
}

TEST(EvalExtract, MarkerIsLastColonFormThenFirstWord) {
  EXPECT_EQ(extract_choice("Answer: A\nOn reflection.\nANSWER : C\nD is wrong", 4), "C");
  // No colon form: the first "answer" word.
  EXPECT_EQ(extract_choice("The answer is B. Another answer would be D.", 4), "B");
  // "answers" and "reanswer" are not the word: no marker, so the last letter in the text.
  EXPECT_EQ(answer_marker_end("Answers: A"), std::string_view::npos);
  EXPECT_EQ(answer_marker_end("reanswer: A"), std::string_view::npos);
  EXPECT_EQ(answer_marker_end("x answer:B"), 9u);
  EXPECT_EQ(answer_marker_end("9answer\t\t: B"), 10u);  // digits are not letters
}

TEST(EvalExtract, ChoiceIsStandaloneAndWithinRange) {
  EXPECT_EQ(extract_choice("Answer: **(B)**", 4), "B");
  EXPECT_EQ(extract_choice("Answer: E is not offered, so B", 4), "B");  // E beyond 4 choices
  EXPECT_EQ(extract_choice("Answer: AB then C", 4), "C");               // AB is not standalone
  EXPECT_EQ(extract_choice("Answer: b", 4), "?");                       // upper case only
  EXPECT_EQ(extract_choice("Answer: J", 10), "J");
  EXPECT_EQ(extract_choice("nothing at all", 4), "?");
}

TEST(EvalExtract, ChoiceWindowIs96BytesAfterMarker) {
  const std::string far = "Answer:" + std::string(95, ' ') + "B and later A";
  EXPECT_EQ(extract_choice(far, 4), "B");  // B is the 96th byte after the colon
  const std::string too_far = "Answer:" + std::string(96, ' ') + "B and later A";
  EXPECT_EQ(extract_choice(too_far, 4), "A");  // outside the window: the last letter in the text
}

TEST(EvalExtract, IntegerMarkerFallbackAndZeros) {
  EXPECT_EQ(extract_integer("We have 12 and 13.\nAnswer: 0070\nso 99 is wrong"), "70");
  EXPECT_EQ(extract_integer("Answer: 000"), "0");
  EXPECT_EQ(extract_integer("no marker, 5 apples and 0042 pears."), "42");
  EXPECT_EQ(extract_integer("Answer: none"), "?");
  EXPECT_EQ(extract_integer("Answer:" + std::string(159, ' ') + "7 then 8"), "7");
  EXPECT_EQ(extract_integer("Answer:" + std::string(160, ' ') + "7 then 8"), "8");
}

TEST(EvalExtract, LineSetsFromMarkerLine) {
  EXPECT_EQ(extract_lines("Line 3 is fine.\nAnswer: 12, 14-15\nLine 20 too."), "12,14-15");
  EXPECT_EQ(extract_lines("Answer: lines 9 - 10 and 7"), "7,9-10");
  EXPECT_EQ(extract_lines("Answer: 10-9"), "9-10");  // reversed range
  EXPECT_EQ(extract_lines("Answer: 0"), "0");
  EXPECT_EQ(extract_lines("Answer: 0, 1"), "0,1");  // zero stays apart from line 1
  // The marker line is empty: the integer fallback finds the next line's number.
  EXPECT_EQ(extract_lines("Answer:\n17"), "17");
  EXPECT_EQ(extract_lines("The overflow is at line 8."), "8");
  EXPECT_EQ(extract_lines("no lines"), "?");
}

TEST(EvalExtract, LineSetGrading) {
  EXPECT_TRUE(grade(lines_q("9-10"), "Answer: 9").passed);
  EXPECT_TRUE(grade(lines_q("9-10"), "Answer: 9, 10").passed);
  EXPECT_TRUE(grade(lines_q("9-10"), "Answer: 9-10").passed);
  EXPECT_FALSE(grade(lines_q("9-10"), "Answer: 9-11").passed);
  EXPECT_FALSE(grade(lines_q("9-10"), "Answer: 9, 12").passed);
  EXPECT_FALSE(grade(lines_q("9-10"), "no idea").passed);
  EXPECT_TRUE(grade(lines_q("12,15"), "Answer: 15").passed);
  EXPECT_TRUE(grade(lines_q("0"), "Answer: 0").passed);
  EXPECT_FALSE(grade(lines_q("0"), "Answer: 3").passed);
  EXPECT_FALSE(grade(lines_q("3"), "Answer: 0, 3").passed);
  EXPECT_FALSE(grade(lines_q("3"), "Answer: 99999999999").passed);
  EXPECT_EQ(grade(lines_q("3"), "Answer: 3").picked, "3");
}

TEST(EvalExtract, ChoiceAndIntegerGrading) {
  EXPECT_TRUE(grade(choice_q("C"), "Answer: C").passed);
  EXPECT_FALSE(grade(choice_q("C"), "Answer: D").passed);
  Question q;
  q.kind = AnswerKind::kInteger;
  q.answer = "70";
  EXPECT_TRUE(grade(q, "Answer: 070").passed);
  const Grade g = grade(q, "Answer: 71");
  EXPECT_FALSE(g.passed);
  EXPECT_EQ(g.picked, "71");
}

TEST(EvalPrompt, UserPromptListsChoicesAndFinalLine) {
  Question q = choice_q("A", 3);
  q.question = "Which?";
  const std::string p = user_prompt(q);
  EXPECT_NE(p.find("Which?\n\nChoices:\nA. choice 0\nB. choice 1\nC. choice 2\n"),
            std::string::npos);
  EXPECT_TRUE(p.ends_with("\nAnswer: <letter>"));
  q.kind = AnswerKind::kInteger;
  q.choices.clear();
  EXPECT_TRUE(user_prompt(q).ends_with("\nAnswer: <integer>"));
  EXPECT_EQ(user_prompt(q).find("Choices:"), std::string::npos);
  q.kind = AnswerKind::kLineSet;
  EXPECT_TRUE(user_prompt(q).ends_with("\nAnswer: <line number or comma-separated line numbers>"));
  EXPECT_FALSE(system_prompt().empty());
}

TEST(EvalSelfTest, BuiltInExtractorChecksPass) {
  const Status s = run_extractor_self_tests();
  EXPECT_TRUE(s.is_ok()) << s.to_string();
}

}  // namespace
}  // namespace ds4::eval
