// Tests of the slash commands, the history view and compaction's model-free decisions.
#include "agent/commands.h"

#include <gtest/gtest.h>

#include "agent/compaction.h"
#include "agent/history.h"

namespace ds4::agent {
namespace {

TEST(Commands, ParseNamesArgumentsAndUnknowns) {
  EXPECT_FALSE(parse_command("hello /save").has_value());
  EXPECT_FALSE(parse_command("   ").has_value());
  auto c = parse_command("  /switch   ab12  ");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->kind, CommandKind::kSwitch);
  EXPECT_EQ(c->arg, "ab12");
  ASSERT_NE(c->info, nullptr);
  EXPECT_TRUE(c->info->needs_idle);
  EXPECT_EQ(parse_command("/exit")->kind, CommandKind::kQuit);
  EXPECT_EQ(parse_command("/history 7")->arg, "7");
  auto u = parse_command("/sav");
  EXPECT_EQ(u->kind, CommandKind::kUnknown);
  EXPECT_EQ(u->info, nullptr);
  EXPECT_EQ(u->name, "/sav");
  EXPECT_FALSE(parse_command("/save")->info->needs_idle);  // scheduled while busy
}

TEST(Commands, CompletionOfNamesAndIds) {
  const std::vector<std::string> ids = {"ab12ff", "ab99", "c0ffee"};
  EXPECT_EQ(complete_command("/s", ids), (std::vector<std::string>{"/save", "/switch", "/strip"}));
  EXPECT_EQ(complete_command("/his", ids), (std::vector<std::string>{"/history"}));
  EXPECT_TRUE(complete_command("hello", ids).empty());
  EXPECT_EQ(complete_command("/switch ab", ids), (std::vector<std::string>{"ab12ff", "ab99"}));
  EXPECT_EQ(complete_command("/del ", ids), ids);
  EXPECT_TRUE(complete_command("/save ab", ids).empty());  // /save takes no id
  EXPECT_TRUE(complete_command("/switch ab cd", ids).empty());
}

TEST(Commands, HelpListsEveryCommand) {
  const std::string help = help_text();
  for (const CommandInfo& info : command_table()) {
    EXPECT_NE(help.find(info.name), std::string::npos) << info.name;
  }
  EXPECT_NE(help.find("Ctrl+C"), std::string::npos);
}

TEST(History, TurnsWithToolRoundsReasoningAndSummary) {
  const std::string t =
      "<｜begin▁of▁sentence｜>system text" + summary_opening() + "we were fixing foo.c" +
      summary_closing() +
      "<｜User｜>first question<｜Assistant｜></think>first answer<｜end▁of▁sentence｜>"
      "<｜User｜>please edit<｜Assistant｜><think>hmm</think>Let me look."
      "<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"read\"></｜DSML｜invoke></｜DSML｜tool_calls>"
      "<｜end▁of▁sentence｜><｜User｜><tool_result>file text</tool_result><｜Assistant｜>"
      "<think>ok</think>Done editing.<｜end▁of▁sentence｜>"
      "<｜User｜>third<｜Assistant｜><think>never closed";
  const std::vector<HistoryTurn> all = recent_turns(t, 10);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_TRUE(all[0].summary);
  EXPECT_EQ(all[0].answer, "we were fixing foo.c");
  EXPECT_EQ(all[1].user, "first question");
  EXPECT_EQ(all[1].answer, "first answer");
  EXPECT_EQ(all[2].user, "please edit");
  EXPECT_EQ(all[2].answer, "Let me look.[tool calls]\nDone editing.");
  EXPECT_EQ(all[2].tool_rounds, 1);
  EXPECT_EQ(all[3].user, "third");
  EXPECT_EQ(all[3].answer, "");
  const std::vector<HistoryTurn> last2 = recent_turns(t, 2);
  ASSERT_EQ(last2.size(), 2u);
  EXPECT_EQ(last2[0].user, "please edit");
}

TEST(History, LongAnswersAreClipped) {
  std::string many;
  for (int i = 0; i < 100; ++i) many += "line " + std::to_string(i) + "\n";
  const std::string clipped = clip_answer(many);
  EXPECT_NE(clipped.find("line 79"), std::string::npos);
  EXPECT_EQ(clipped.find("line 80"), std::string::npos);
  EXPECT_TRUE(clipped.ends_with("[... clipped]"));
  const std::string wide(20000, 'x');
  EXPECT_EQ(clip_answer(wide).size(), kHistoryMaxBytes + std::string("\n[... clipped]").size());
  EXPECT_EQ(clip_answer("short"), "short");
}

TEST(Compaction, SoftTrigger) {
  EXPECT_FALSE(needs_compaction(1000, 100000));
  EXPECT_TRUE(needs_compaction(85000, 100000));
  EXPECT_FALSE(needs_compaction(84999, 100000));
  // Small contexts: a quarter of the context free is the limit.
  EXPECT_TRUE(needs_compaction(6144, 8192));
  EXPECT_FALSE(needs_compaction(6000, 8192));
  // Large ones: 8192 free tokens.
  EXPECT_TRUE(needs_compaction(1000000 - 8192, 1000000));
  EXPECT_FALSE(needs_compaction(100, 0));
}

TEST(Compaction, SummaryCleanUp) {
  EXPECT_EQ(clean_summary("  Goals: x.\n<"), "Goals: x.");
  EXPECT_EQ(clean_summary("\n\n"), "");
  EXPECT_EQ(clean_summary("a < b"), "a < b");
}

TEST(Compaction, TailStartsAtAUserTurnInsideTheWindow) {
  constexpr TokenId kU = 7;
  // system: 0..3; then turns at 4, 10, 16; bottom 20.
  std::vector<TokenId> t(20, 1);
  t[4] = t[10] = t[16] = kU;
  // ctx 100: window 10 tokens -> from 10: the user turn at 10.
  EXPECT_EQ(tail_start(t, 4, 20, 100, kU), 10u);
  // ctx 60: window 6 -> from 14: the next user turn is 16.
  EXPECT_EQ(tail_start(t, 4, 20, 60, kU), 16u);
  // ctx 30: window 3 -> from 17: none inside: nothing kept.
  EXPECT_EQ(tail_start(t, 4, 20, 30, kU), 20u);
  // A huge window never reaches into the system prompt.
  EXPECT_EQ(tail_start(t, 4, 20, 1000000, kU), 4u);
}

}  // namespace
}  // namespace ds4::agent
