// Protects: the published benchmark formats ds4-eval reads from a user's path (issue 52): GPQA's
// CSV (quoted fields with commas, doubled quotes and line breaks; the four answers shuffled by a
// fixed permutation of the record id, the key following the correct one), SuperGPQA's and AIME's
// JSONL, and their errors naming the record's line. The samples are written here (no dataset text).
#include "eval/datasets.h"

#include <gtest/gtest.h>

namespace ds4::eval {
namespace {

const std::string kGpqa =
    "Record ID,Question,Correct Answer,Incorrect Answer 1,Incorrect Answer 2,Incorrect Answer "
    "3,High-level domain,Subdomain\r\n"
    "rec001,\"Which is larger, 3 or 5?\",5,3,\"\"\"neither\"\"\",\"both,\nequally\",Math,Order\r\n"
    "rec002,What colour is a clear daytime sky?,Blue,Green,Red,Black,Physics,Optics\r\n";

TEST(EvalDatasets, CsvFollowsRfc4180) {
  auto rows = parse_csv("a,\"b,c\",\"d\"\"e\"\n\"multi\nline\",x,\n");
  ASSERT_TRUE(rows.is_ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].fields, (std::vector<std::string>{"a", "b,c", "d\"e"}));
  EXPECT_EQ((*rows)[1].fields, (std::vector<std::string>{"multi\nline", "x", ""}));
  EXPECT_EQ((*rows)[1].line, 2);
  EXPECT_NE(parse_csv("a,\"open\n").status().message().find("line 1"), std::string::npos);
  EXPECT_NE(parse_csv("a\nb\"c\n").status().message().find("line 2"), std::string::npos);
  EXPECT_NE(parse_csv("\"a\"b\n").status().message().find("after a closing quote"),
            std::string::npos);
  EXPECT_FALSE(parse_csv("\xff\n").is_ok());
}

TEST(EvalDatasets, GpqaShufflesTheAnswersByTheRecordId) {
  auto q = parse_dataset(kGpqa, DatasetFormat::kGpqa);
  ASSERT_TRUE(q.is_ok()) << q.status().message();
  ASSERT_EQ(q->size(), 2u);
  const Question& a = (*q)[0];
  EXPECT_EQ(a.key(), "gpqa/rec001");
  EXPECT_EQ(a.domain, "Math");
  EXPECT_EQ(a.question, "Which is larger, 3 or 5?");
  ASSERT_EQ(a.choices.size(), 4u);
  ASSERT_EQ(a.answer.size(), 1u);
  EXPECT_EQ(a.choices[size_t(a.answer[0] - 'A')], "5") << "the key is the correct answer's letter";
  std::vector<std::string> sorted = a.choices;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<std::string>{"\"neither\"", "3", "5", "both,\nequally"}));
  // The same file gives the same order; the two records are not both left in file order.
  EXPECT_EQ(parse_dataset(kGpqa, DatasetFormat::kGpqa)->at(0).choices, a.choices);
  const Question& b = (*q)[1];
  EXPECT_EQ(b.choices[size_t(b.answer[0] - 'A')], "Blue");
  EXPECT_FALSE(a.answer == "A" && b.answer == "A") << "no shuffle at all";
}

TEST(EvalDatasets, GpqaErrorsNameTheLine) {
  const auto err = [](const std::string& text) {
    return parse_dataset(text, DatasetFormat::kGpqa).status().message();
  };
  EXPECT_NE(err("Question,Correct Answer\nq,a\n").find("line 1"), std::string::npos);
  const std::string head =
      "Record ID,Question,Correct Answer,Incorrect Answer 1,Incorrect Answer 2,Incorrect Answer "
      "3\n";
  EXPECT_NE(err(head + "r1,q,a,b,c,d\nr2,q,a,b\n").find("gpqa line 3"), std::string::npos);
  EXPECT_NE(err(head + "r1,q,a,b,,d\n").find("an answer is empty"), std::string::npos);
  EXPECT_NE(err(head + "r1,q,a,b,c,d\nr1,q,a,b,c,d\n").find("appears twice"), std::string::npos);
  EXPECT_NE(err(head).find("no questions"), std::string::npos);
}

TEST(EvalDatasets, SuperGpqaAndAimeJsonl) {
  const std::string super =
      "{\"uuid\":\"u-1\",\"question\":\"Pick the prime.\",\"options\":[\"4\",\"6\",\"7\",\"9\"],"
      "\"answer\":\"7\",\"answer_letter\":\"C\",\"discipline\":\"Science\",\"field\":\"Math\","
      "\"subfield\":\"Numbers\"}\n\n";
  auto s = parse_dataset(super, DatasetFormat::kSuperGpqa);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ((*s)[0].key(), "supergpqa/u-1");
  EXPECT_EQ((*s)[0].answer, "C");
  EXPECT_EQ((*s)[0].choices.size(), 4u);
  EXPECT_EQ((*s)[0].title, "Math / Numbers");
  const std::string aime =
      "{\"id\":\"2025-I-1\",\"problem\":\"What is 6 times 7?\",\"answer\":\"042\"}\n"
      "{\"question\":\"What is 2 plus 2?\",\"answer\":4}\n";
  auto a = parse_dataset(aime, DatasetFormat::kAime);
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  ASSERT_EQ(a->size(), 2u);
  EXPECT_EQ((*a)[0].key(), "aime/2025-I-1");
  EXPECT_EQ((*a)[0].answer, "42");
  EXPECT_EQ((*a)[1].key(), "aime/line2");
  EXPECT_EQ((*a)[1].answer, "4");
  // Errors name the line.
  EXPECT_NE(parse_dataset(super + "{\"uuid\":\"u-2\",\"question\":\"q\",\"options\":[\"a\",\"b\"],"
                                  "\"answer_letter\":\"E\"}\n",
                          DatasetFormat::kSuperGpqa)
                .status()
                .message()
                .find("supergpqa line 3"),
            std::string::npos);
  EXPECT_NE(parse_dataset("{\"problem\":\"q\"}\n", DatasetFormat::kAime)
                .status()
                .message()
                .find("aime line 1: no answer"),
            std::string::npos);
  EXPECT_NE(
      parse_dataset("[1]\n", DatasetFormat::kAime).status().message().find("not a JSON object"),
      std::string::npos);
  EXPECT_FALSE(dataset_format("mmlu").is_ok());
  EXPECT_EQ(*dataset_format("gpqa"), DatasetFormat::kGpqa);
}

}  // namespace
}  // namespace ds4::eval
