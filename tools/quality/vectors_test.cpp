// tools/quality/vectors_test.cpp: the official logprob vector format (vectors.h): a file in the
// layout of ../shared/fixtures/official-vectors/official.vec reads as written; what the writer
// writes reads back equal (logprobs to the last bit); each kind of damage is refused with its
// line number.
#include "tools/quality/vectors.h"

#include <gtest/gtest.h>

#include <string>

namespace ds4::quality {
namespace {

constexpr const char* kOfficialLike =
    "# ds4-official-logprob-vectors-v1\n"
    "# case <id> <ctx> <steps> <prompt-file>\n"
    "\n"
    "case short_fact 16384 2 tests/test-vectors/prompts/short_fact.txt\n"
    "step 0 416461 1\n"
    "top 416461 0\n"
    "step 1 204c6f76 2\n"
    "top 204c6f76 -0.0012\n"
    "top 20c3a8 -6.75\n"
    "end\n"
    "case other 4096 0 p.txt\n"
    "end\n";

TEST(QualityVectors, TheOfficialLayoutReads) {
  const auto cases = parse_vectors(kOfficialLike);
  ASSERT_TRUE(cases.is_ok()) << cases.status().message();
  ASSERT_EQ(cases->size(), 2u);
  const VectorCase& c = (*cases)[0];
  EXPECT_EQ(c.id, "short_fact");
  EXPECT_EQ(c.ctx, 16384);
  EXPECT_EQ(c.prompt_file, "tests/test-vectors/prompts/short_fact.txt");
  ASSERT_EQ(c.steps.size(), 2u);
  EXPECT_EQ(c.steps[0].selected, "Ada");
  EXPECT_EQ(c.steps[1].selected, " Lov");
  ASSERT_EQ(c.steps[1].top.size(), 2u);
  EXPECT_EQ(c.steps[1].top[1].first, " \xc3\xa8");
  EXPECT_EQ(c.steps[1].top[1].second, -6.75);
  EXPECT_TRUE((*cases)[1].steps.empty());
}

TEST(QualityVectors, WrittenVectorsReadBackEqual) {
  const auto cases = parse_vectors(kOfficialLike);
  ASSERT_TRUE(cases.is_ok());
  std::vector<VectorCase> more = *cases;
  more[1].steps.push_back({"\n\x01\xff", {{"\n\x01\xff", -1.0 / 3.0}, {"x", -1e-300}}});
  const auto again = parse_vectors(write_vectors(more));
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  ASSERT_EQ(again->size(), more.size());
  for (size_t i = 0; i < more.size(); ++i) {
    EXPECT_EQ((*again)[i].id, more[i].id);
    EXPECT_EQ((*again)[i].ctx, more[i].ctx);
    EXPECT_EQ((*again)[i].prompt_file, more[i].prompt_file);
    ASSERT_EQ((*again)[i].steps.size(), more[i].steps.size());
    for (size_t k = 0; k < more[i].steps.size(); ++k) {
      EXPECT_EQ((*again)[i].steps[k].selected, more[i].steps[k].selected);
      EXPECT_EQ((*again)[i].steps[k].top, more[i].steps[k].top);  // doubles to the last bit
    }
  }
}

TEST(QualityVectors, DamageIsRefusedWithItsLine) {
  const auto refused = [](const std::string& text, const std::string& says) {
    const auto r = parse_vectors(text);
    ASSERT_FALSE(r.is_ok()) << says;
    EXPECT_NE(r.status().message().find(says), std::string::npos) << r.status().message();
  };
  const std::string head = "case a 10 1 p.txt\n";
  refused("", "no case");
  refused("# only a comment\n", "no case");
  refused(head + "step 0 41 1\ntop 41 0\n", "has no 'end'");
  refused(head + "end\n", "line 2: 'end' before");
  refused(head + "step 0 41 2\ntop 41 0\nend\n", "line 4: 'end' before");
  refused(head + "step 1 41 1\n", "line 2: step INDEX out of order");
  refused(head + "step 0 4 1\n", "line 2: SELECTED_HEX");
  refused(head + "step 0 zz 1\n", "SELECTED_HEX");
  refused(head + "step 0 " + std::string(514, 'a') + " 1\n", "SELECTED_HEX");
  refused(head + "step 0 41 0\n", "TOPN");
  refused(head + "step 0 41 99999\n", "TOPN");
  refused(head + "step 0 41 1\ntop 41 0.5\n", "LOGPROB");
  refused(head + "step 0 41 1\ntop 41 nan\n", "LOGPROB");
  refused(head + "step 0 41 1\ntop 41 -inf\n", "LOGPROB");
  refused(head + "step 0 41 1\ntop 41 -1 extra\n", "expected 'top");
  refused(head + "step 0 41 1\ntop 41 0\ntop 41 0\n", "beyond its step's TOPN");
  refused(head + "step 0 41 1\nstep 1 41 1\n", "before the last step's top lines");
  refused(head + "step 0 41 1\ntop 41 0\nstep 1 41 1\n", "more steps than");
  refused("case a 0 1 p.txt\n", "CTX");
  refused("case a 10 -1 p.txt\n", "STEPS");
  refused("case a 10 999999 p.txt\n", "STEPS");
  refused("case a 10 1\n", "expected 'case");
  refused(head + "case b 10 0 q.txt\n", "a case before");
  refused("step 0 41 1\n", "a step outside a case");
  refused("top 41 0\n", "a top line");
  refused("end\n", "an 'end' outside");
  refused("hello\n", "unknown line");
}

}  // namespace
}  // namespace ds4::quality
