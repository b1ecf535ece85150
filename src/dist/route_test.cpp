// Tests of the route search and the registration checks.
#include "dist/route.h"

#include <gtest/gtest.h>

namespace ds4::dist {
namespace {

TEST(Route, ChainsContiguousRangesToTheHead) {
  const std::vector<Candidate> w = {{.index = 0, .first = 21, .last = 42, .output = true},
                                    {.index = 1, .first = 11, .last = 20},
                                    {.index = 2, .first = 11, .last = 15}};
  auto r = plan_route(43, 10, false, w);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(*r, (std::vector<int>{1, 0}));
  // The coordinator covering everything with its head: no hops.
  r = plan_route(43, 42, true, {});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(r->empty());
}

TEST(Route, BacktracksAndPrefersTheHead) {
  // 11..15 leads nowhere (nothing starts at 16): the search backs up to 11..20.
  const std::vector<Candidate> w = {{.index = 0, .first = 11, .last = 15},
                                    {.index = 1, .first = 11, .last = 20},
                                    {.index = 2, .first = 21, .last = 42},
                                    {.index = 3, .first = 21, .last = 42, .output = true}};
  auto r = plan_route(43, 10, false, w);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(*r, (std::vector<int>{1, 3}));
  // With the head computed by the coordinator, a worker without it may end the chain.
  r = plan_route(43, 10, true, std::vector<Candidate>{w[1], w[2]});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(*r, (std::vector<int>{1, 2}));
}

TEST(Route, SaysWhatIsMissing) {
  auto r = plan_route(43, 10, false, std::vector<Candidate>{{.index = 0, .first = 11, .last = 20}});
  EXPECT_EQ(r.status().message(), "distributed route incomplete: missing layer 21");
  r = plan_route(43, 10, false, {});
  EXPECT_EQ(r.status().message(), "distributed route incomplete: missing layer 11");
  r = plan_route(43, 10, false, std::vector<Candidate>{{.index = 0, .first = 11, .last = 42}});
  EXPECT_NE(r.status().message().find("no worker computes the output head"), std::string::npos);
  r = plan_route(43, 42, false, {});
  EXPECT_FALSE(r.is_ok());
}

TEST(Route, RegistrationNamesEveryDifference) {
  const Hello c{.build = "abc",
                .fingerprint = "f1",
                .shape = "flash",
                .n_layer = 43,
                .n_vocab = 129280,
                .hidden_width = 16384,
                .layer_first = 0,
                .layer_last = 20,
                .ctx = 32768};
  Hello w = c;
  w.layer_first = 21;
  w.layer_last = 42;
  w.output = true;
  EXPECT_TRUE(check_registration(c, w).is_ok());
  w.build = "def";
  w.fingerprint = "f2";
  w.ctx = 4096;
  const std::string msg = check_registration(c, w).message();
  EXPECT_NE(msg.find("build def (the coordinator's: abc)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model f2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("context 4096"), std::string::npos) << msg;
  w = c;
  w.layer_first = 0;
  EXPECT_FALSE(check_registration(c, w).is_ok());
}

}  // namespace
}  // namespace ds4::dist
