// Protects: the status footer's exact text (features.md §5.8) at narrow, usual and wide terminals:
// what the user reads while the model works, and that no row is ever wider than the terminal.
#include "tui/footer.h"

#include <gtest/gtest.h>

#include "tui/width.h"

namespace ds4::tui {
namespace {

using Phase = FooterState::Phase;

// The test strings spell the bar's cells with '>' (▶) and '.' (·).
std::string ascii(std::string s) {
  for (auto [from, to] :
       {std::pair<std::string, std::string>{"\xe2\x96\xb6", ">"}, {"\xc2\xb7", "."}}) {
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) {
      s.replace(p, from.size(), to);
    }
  }
  return s;
}

std::vector<std::string> footer(const FooterState& s, int width) {
  std::vector<std::string> rows = format_footer(s, width);
  for (std::string& r : rows) {
    EXPECT_LE(display_width(r), width) << r;
    r = ascii(r);
  }
  return rows;
}

TEST(Footer, NumbersRatesAndDurations) {
  EXPECT_EQ(format_count(999), "999");
  EXPECT_EQ(format_count(9999), "9999");
  EXPECT_EQ(format_count(10000), "10k");
  EXPECT_EQ(format_count(12345), "12.3k");
  EXPECT_EQ(format_count(99999), "99.9k");
  EXPECT_EQ(format_count(100000), "100k");
  EXPECT_EQ(format_count(123456), "123k");
  EXPECT_EQ(format_count(1000000), "1M");
  EXPECT_EQ(format_count(1234567), "1.2M");
  EXPECT_EQ(format_count(12345678), "12M");
  EXPECT_EQ(format_count(-5), "-5");
  EXPECT_EQ(format_rate(1234), "1234 t/s");
  EXPECT_EQ(format_rate(45.5), "45.5 t/s");
  EXPECT_EQ(format_rate(3.5), "3.50 t/s");
  EXPECT_EQ(format_rate(0), "0.00 t/s");
  EXPECT_EQ(format_duration(0.2), "1s");
  EXPECT_EQ(format_duration(42), "42s");
  EXPECT_EQ(format_duration(59.5), "1m00s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(3720), "1h02m");
}

TEST(Footer, PrefillBar) {
  EXPECT_EQ(ascii(prefill_bar(0, 100, 0)), std::string(32, '.'));
  EXPECT_EQ(ascii(prefill_bar(100, 100, 0)), std::string(32, '>'));
  EXPECT_EQ(ascii(prefill_bar(25, 100, 1234)), ">>>>>>>>............. 1234 t/s .");
  EXPECT_EQ(ascii(prefill_bar(90, 100, 1234)), ">>>>>>>>>>>>>>>>>>>>>>>>>>>>....");  // no room
  EXPECT_EQ(ascii(prefill_bar(5, 0, 10)), std::string(21, '.') + " 10.0 t/s .");
}

TEST(Footer, IdleAndPower) {
  FooterState s;
  s.ctx_used = 1234;
  s.ctx_total = 100000;
  EXPECT_EQ(footer(s, 80), std::vector<std::string>{"ctx 1234/100000 | idle"});
  s.power = 50;
  EXPECT_EQ(footer(s, 200), std::vector<std::string>{"ctx 1234/100000 | idle | \xe2\x9a\xa1 50%"});
  EXPECT_EQ(footer(s, 20), std::vector<std::string>{"ctx 1234/100k | idle"});
}

TEST(Footer, Prefill) {
  FooterState s;
  s.ctx_used = 30000;
  s.ctx_total = 100000;
  s.phase = Phase::kPrefill;
  s.prefill_done = 25000;
  s.prefill_total = 100000;
  s.prefill_rate = 1234;
  s.label = 1;
  EXPECT_EQ(footer(s, 200),
            std::vector<std::string>{"ctx 30000/100000 | absorbing [>>>>>>>>............. 1234 t/s "
                                     ".] 25000/100000 25% ~1m01s left"});
  EXPECT_EQ(footer(s, 80),
            std::vector<std::string>{"ctx 30k/100k | absorbing [>>>>>>>>............. 1234 t/s .] "
                                     "25k/100k 25%"});
  EXPECT_EQ(footer(s, 20), std::vector<std::string>{"ctx 30k/100k | absor"});
  s.prefill_rate = 0;
  s.label = 6 + 5;  // labels rotate
  EXPECT_EQ(footer(s, 200), std::vector<std::string>{
                                "ctx 30000/100000 | scrutinizing [>>>>>>>>......................."
                                ".] 25000/100000 25%"});
}

TEST(Footer, GenerationCompactionAndOtherStates) {
  FooterState s;
  s.ctx_used = 45678;
  s.ctx_total = 100000;
  s.phase = Phase::kGeneration;
  s.generated = 321;
  s.gen_rate = 23.5;
  s.greedy = true;
  EXPECT_EQ(footer(s, 80), std::vector<std::string>{
                               "ctx 45678/100000 | generation 321 tokens \xe2\x9d\x84\xef\xb8\x8f "
                               "23.5 t/s"});
  EXPECT_EQ(footer(s, 20), std::vector<std::string>{"ctx 45.6k/100k | gen"});
  s.greedy = false;
  s.gen_rate = 0;
  EXPECT_EQ(footer(s, 200), std::vector<std::string>{"ctx 45678/100000 | generation 321 tokens"});
  s.phase = Phase::kCompacting;
  s.compact_tokens = 512;
  EXPECT_EQ(footer(s, 80),
            std::vector<std::string>{"ctx 45678/100000 | COMPACTING summary 512 tokens"});
  s.phase = Phase::kSaving;
  EXPECT_EQ(footer(s, 80), std::vector<std::string>{"ctx 45678/100000 | saving session"});
  s.phase = Phase::kInterrupted;
  EXPECT_EQ(footer(s, 80), std::vector<std::string>{"ctx 45678/100000 | interrupted"});
  s.phase = Phase::kError;
  s.error = "evaluation failed\nsecond line";
  EXPECT_EQ(footer(s, 80), std::vector<std::string>{"ctx 45678/100000 | error: evaluation failed"});
}

TEST(Footer, QueuedRows) {
  FooterState s;
  s.ctx_used = 10;
  s.ctx_total = 1000;
  s.phase = Phase::kGeneration;
  s.generated = 5;
  s.queued = {"fix the bug in main.cpp", "line one\nline two",
              "a very long prompt that goes on and on and on past the room", "fourth"};
  EXPECT_EQ(footer(s, 80),
            (std::vector<std::string>{
                "ctx 10/1000 | generation 5 tokens",
                "queued: fix the bug in main.cpp (ctrl+x to edit, ESC to send ASAP)",
                "queued: line one\xe2\x80\xa6 (ctrl+x to edit, ESC to send ASAP)",
                "queued: a very long prompt that goes on and\xe2\x80\xa6 (ctrl+x to edit, ESC "
                "to send ASAP)"}));
  EXPECT_EQ(footer(s, 20), (std::vector<std::string>{"ctx 10/1000 | genera", "queued: fix the bug ",
                                                     "queued: line one", "queued: a very long "}));
  const std::vector<std::string> wide = footer(s, 200);
  ASSERT_EQ(wide.size(), 4u);
  EXPECT_EQ(wide[3],
            "queued: a very long prompt that goes on and on and on past the room (ctrl+x to edit, "
            "ESC to send ASAP)");
}

}  // namespace
}  // namespace ds4::tui
