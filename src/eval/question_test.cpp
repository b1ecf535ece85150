// Question files (docs/eval.md): a well-formed file loads with normalized answers; each hostile
// input is refused with the 1-based line number and the problem; the project's own question set
// (data/eval/questions.jsonl) validates and its integer answers are the ones recomputed here.
#include "eval/question.h"

#include <gtest/gtest.h>

#include <set>

#include "eval/extract.h"

namespace ds4::eval {
namespace {

const char* kGood =
    "# a comment\n"
    "\n"
    R"({"source":"ds4","id":"a1","domain":"math","title":"t","question":"2+2?","kind":"integer","answer":"004"})"
    "\n"
    R"({"source":"ds4","id":"m1","question":"Pick","kind":"choice","choices":["x","y","z"],"answer":"c"})"
    "\n"
    R"({"source":"ds4","id":"s1","question":"code","kind":"lines","answer":"12, 9-10, 11"})"
    "\r\n"
    R"({"source":"ds4","id":"n1","question":"n","kind":"integer","answer":17})";

std::string line(const std::string& fields) { return "{" + fields + "}\n"; }
const std::string kOk1 =
    line(R"("source":"s","id":"ok1","question":"q","kind":"integer","answer":"1")");

// The message of the error that `text` gives, which must name `line_no`.
std::string refused(const std::string& text, size_t line_no) {
  auto r = parse_questions(text);
  EXPECT_FALSE(r.is_ok()) << "accepted: " << text.substr(0, 200);
  if (r.is_ok()) return "";
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("questions line " + std::to_string(line_no) + ":"), std::string::npos) << m;
  return m;
}

TEST(EvalQuestions, ParsesAndNormalizes) {
  auto r = parse_questions(kGood);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0].answer, "4");
  EXPECT_EQ((*r)[0].kind, AnswerKind::kInteger);
  EXPECT_EQ((*r)[0].key(), "ds4/a1");
  EXPECT_EQ((*r)[0].domain, "math");
  EXPECT_EQ((*r)[1].answer, "C");
  EXPECT_EQ((*r)[1].choices.size(), 3u);
  EXPECT_EQ((*r)[2].answer, "9-12");
  EXPECT_EQ((*r)[3].answer, "17");
  EXPECT_EQ(find_question(*r, "ds4/m1"), &(*r)[1]);
  EXPECT_EQ(find_question(*r, "ds4/zz"), nullptr);
}

TEST(EvalQuestions, HostileInputsNameTheLine) {
  EXPECT_NE(refused(kOk1 + "{not json\n", 2).find("invalid JSON"), std::string::npos);
  EXPECT_NE(
      refused(kOk1 + "\n" + line(R"("source":"s","id":"b","question":"q","kind":"integer")"), 3)
          .find("missing field \"answer\""),
      std::string::npos);
  EXPECT_NE(refused(line(R"("source":"s","id":"b","question":"q","kind":"integer","answer":"")"), 1)
                .find("empty"),
            std::string::npos);
  EXPECT_NE(
      refused(
          kOk1 +
              line(
                  R"("source":"s","id":"b","question":"q","kind":"choice","choices":["a","b","c","d"],"answer":"F")"),
          2)
          .find("beyond the 4 choices (A-D)"),
      std::string::npos);
  EXPECT_NE(
      refused(line(R"("source":"s","id":"b","question":"q","kind":"integer","answer":"12a")"), 1)
          .find("not a non-negative integer"),
      std::string::npos);
  EXPECT_NE(refused(line(R"("source":"s","id":"b","question":"q","kind":"integer","answer":-3)"), 1)
                .find("not a string"),
            std::string::npos);
  for (const char* bad : {"9-", "10-9", "a", "1,,2", "0,3", "1;2", "100000"}) {
    EXPECT_NE(
        refused(kOk1 + kOk1.substr(0, 0) +
                    line(std::string(
                             R"("source":"s","id":"b","question":"q","kind":"lines","answer":")") +
                         bad + "\""),
                2)
            .find("line set"),
        std::string::npos)
        << bad;
  }
  std::string eleven =
      R"("source":"s","id":"b","question":"q","kind":"choice","answer":"A","choices":[)";
  for (int i = 0; i < 11; ++i) eleven += std::string(i ? "," : "") + "\"c\"";
  EXPECT_NE(refused(line(eleven + "]"), 1).find("11 choices"), std::string::npos);
  EXPECT_NE(refused(kOk1 + kOk1, 2).find("duplicate id \"ok1\""), std::string::npos);
  const std::string big =
      line(R"("source":"s","id":"b","kind":"integer","answer":"1","question":")" +
           std::string(kMaxQuestionLineBytes, 'x') + "\"");
  EXPECT_NE(refused(kOk1 + big, 2).find("limit 65536"), std::string::npos);
  EXPECT_NE(refused(kOk1 + line(R"("source":"s","id":"b","question":"q)" + std::string("\xC3\x28") +
                                R"(","kind":"integer","answer":"1")"),
                    2)
                .find("invalid UTF-8"),
            std::string::npos);
  EXPECT_NE(
      refused(
          kOk1 +
              line(
                  R"("source":"s","id":"b","question":"q","kind":"integer","answer":"1","extra":1)"),
          2)
          .find("unknown field"),
      std::string::npos);
  EXPECT_NE(
      refused(
          kOk1 +
              line(
                  R"("source":"s","id":"b","question":"q","kind":"integer","choices":["a","b"],"answer":"1")"),
          2)
          .find("\"choices\" given"),
      std::string::npos);
  EXPECT_NE(
      refused(
          kOk1 + line(R"("source":"s","id":"b c","question":"q","kind":"integer","answer":"1")"), 2)
          .find("source/id"),
      std::string::npos);
  EXPECT_NE(refused(kOk1 + "[[[[[[[[1]]]]]]]]\n", 2).find("nested"), std::string::npos);
  EXPECT_NE(refused(kOk1 + "[1]\n", 2).find("not a JSON object"), std::string::npos);
  auto empty = parse_questions("# only a comment\n\n");
  ASSERT_FALSE(empty.is_ok());
  EXPECT_NE(empty.status().message().find("no questions"), std::string::npos);
  EXPECT_FALSE(parse_questions("").is_ok());
}

TEST(EvalQuestions, MissingFileIsNotFound) {
  auto r = load_questions("/nonexistent/ds4-eval/questions.jsonl");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST(EvalQuestions, LineSetsNormalize) {
  auto r = parse_line_set("15, 12-13,14 , 3");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(format_line_set(*r), "3,12-15");
  EXPECT_TRUE(contains_range(*r, 13, 15));
  EXPECT_FALSE(contains_range(*r, 3, 4));
  EXPECT_EQ(format_line_set(parse_line_set("0").value()), "0");
}

// The project's own set: it loads, it has the promised mix, every answer grades as passed when
// the model states it, and the integer answers recomputed here agree.
TEST(EvalQuestions, ProjectQuestionSetValidates) {
  auto r = load_questions(DS4_EVAL_QUESTIONS_PATH);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  int n[3] = {};
  int safe = 0;
  for (const Question& q : *r) {
    ++n[static_cast<int>(q.kind)];
    safe += q.kind == AnswerKind::kLineSet && q.answer == "0";
    EXPECT_TRUE(grade(q, "Reasoning...\nAnswer: " + q.answer).passed) << q.key();
    if (q.kind == AnswerKind::kChoice) {
      EXPECT_GE(q.choices.size(), 4u) << q.key();
    }
  }
  EXPECT_GE(n[static_cast<int>(AnswerKind::kChoice)], 12);
  EXPECT_GE(n[static_cast<int>(AnswerKind::kInteger)], 12);
  EXPECT_GE(n[static_cast<int>(AnswerKind::kLineSet)], 11);
  EXPECT_GE(safe, 1);
  // Answers recomputed from the questions' statements.
  auto answer = [&](const char* key) {
    const Question* q = find_question(*r, key);
    return q ? q->answer : std::string("(missing)");
  };
  EXPECT_EQ(answer("ds4/int-01"), std::to_string(17 * 23 + 19 * 29));
  long long sum = 0;
  for (int k = 1; k <= 100; ++k) sum += (k % 3 == 0 || k % 5 == 0) ? k : 0;
  EXPECT_EQ(answer("ds4/int-02"), std::to_string(sum));
  long long p = 1;
  for (int e = 0; e < 100; ++e) p = p * 7 % 1000;
  EXPECT_EQ(answer("ds4/int-03"), std::to_string(p));
}

}  // namespace
}  // namespace ds4::eval
