// src/chat/prefix_test.cpp: when does rendering a conversation and then appending one message give
// a rendering that starts with the old one (so the KV cache of the old prompt can be reused)?
// Protects: the prefix-stability rule and its four exceptions as documented in docs/chat.md:
//   E1 generation prompt: the old prompt ends with "<｜Assistant｜><think>" (or </think>) after a
//      final user turn, and the new message is not an assistant or latest_reminder message;
//   E2 reasoning dropping: thinking mode with dropping active, the new message opens a new user
//      turn, and the old last user turn had a transition, was a developer message, or was
//      followed by assistant turns (their thinking parts disappear);
//   E3 tool-result ordering: a tool result joins a user turn before results of later calls;
//   E4 tools appear: the new message brings the first tools in thinking mode with dropping on.
// Outside these, appending never changes earlier bytes (property-tested on random conversations).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "ds4/chat.h"

namespace ds4::chat {
namespace {

bool is_prefix(const std::string& a, const std::string& b) {
  return b.size() >= a.size() && b.compare(0, a.size(), a) == 0;
}

Message make(Role role, std::string content) {
  Message m;
  m.role = role;
  m.content = std::move(content);
  return m;
}

std::string render_ok(const std::vector<Message>& c, const RenderOptions& o) {
  auto r = render(c, o);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? r.value() : std::string();
}

// ---- the rule, written independently of the renderer ----
struct TurnInfo {
  Role role;             // kUser for merged user/tool messages
  bool has_results;      // user turn already holding tool results
  size_t first_message;  // index of the first message of the turn
};

std::vector<TurnInfo> turns_of(const std::vector<Message>& c) {
  std::vector<TurnInfo> t;
  for (size_t i = 0; i < c.size(); ++i) {
    const bool userish = c[i].role == Role::kUser || c[i].role == Role::kTool;
    if (userish && !t.empty() && t.back().role == Role::kUser) {
      t.back().has_results |= c[i].role == Role::kTool;
      continue;
    }
    t.push_back({userish ? Role::kUser : c[i].role, c[i].role == Role::kTool, i});
  }
  return t;
}

bool user_like(Role r) { return r == Role::kUser || r == Role::kDeveloper; }
bool any_tools(const std::vector<Message>& c) {
  for (const Message& m : c) {
    if (!m.tools.empty()) return true;
  }
  return false;
}

// Position of a tool result among the latest calls before message `upto` (0 if unknown).
size_t call_position(const std::vector<Message>& c, size_t upto, const std::string& id,
                     bool* have_map) {
  std::unordered_map<std::string, size_t> order;
  for (size_t i = 0; i < upto; ++i) {
    if (c[i].role != Role::kAssistant || c[i].tool_calls.empty()) continue;
    order.clear();
    for (size_t k = 0; k < c[i].tool_calls.size(); ++k) {
      if (!c[i].tool_calls[k].id.empty()) order[c[i].tool_calls[k].id] = k;
    }
  }
  *have_map = !order.empty();
  auto it = order.find(id);
  return it == order.end() ? 0 : it->second;
}

enum class Exception { kNone, kGenerationPrompt, kReasoningDrop, kToolResultOrder, kToolsAppear };

Exception classify_append(const std::vector<Message>& c, const Message& m, const RenderOptions& o) {
  const std::vector<TurnInfo> turns = turns_of(c);
  const bool thinking = effective_think_mode(o.think, o.context_size) != ThinkMode::kNone;
  const bool last_userish = !turns.empty() && user_like(turns.back().role);
  const bool merges = (m.role == Role::kUser || m.role == Role::kTool) && !turns.empty() &&
                      turns.back().role == Role::kUser;
  if (o.add_generation_prompt && last_userish && m.role != Role::kAssistant &&
      m.role != Role::kLatestReminder) {
    return Exception::kGenerationPrompt;
  }
  if (thinking && o.drop_earlier_reasoning && !any_tools(c) && !m.tools.empty()) {
    return Exception::kToolsAppear;
  }
  std::vector<Message> next = c;
  next.push_back(m);
  const bool drop = thinking && o.drop_earlier_reasoning && !any_tools(next);
  if (drop && user_like(m.role == Role::kTool ? Role::kUser : m.role) && !merges) {
    int last = -1;
    for (size_t i = 0; i < turns.size(); ++i) {
      if (user_like(turns[i].role)) last = static_cast<int>(i);
    }
    bool affected = false;
    for (size_t i = static_cast<size_t>(last + 1); i < turns.size(); ++i) {
      affected |= turns[i].role == Role::kAssistant;
    }
    if (last >= 0) {
      const bool has_transition = static_cast<size_t>(last) + 1 < turns.size()
                                      ? (turns[last + 1].role == Role::kAssistant ||
                                         turns[last + 1].role == Role::kLatestReminder)
                                      : o.add_generation_prompt;
      affected |= turns[last].role == Role::kDeveloper || has_transition;
    }
    if (affected) return Exception::kReasoningDrop;
  }
  if (merges && m.role == Role::kTool) {
    bool have_map = false;
    const size_t mine = call_position(c, c.size(), m.tool_call_id, &have_map);
    for (size_t i = turns.back().first_message; have_map && i < c.size(); ++i) {
      bool unused = false;
      if (c[i].role == Role::kTool &&
          call_position(c, c.size(), c[i].tool_call_id, &unused) > mine) {
        return Exception::kToolResultOrder;
      }
    }
  }
  return Exception::kNone;
}

// ---- random conversations ----
class ConversationGenerator {
 public:
  explicit ConversationGenerator(uint32_t seed) : rng_(seed) {}

  std::vector<Message> conversation() {
    std::vector<Message> c;
    ids_.clear();
    for (int n = 1 + pick(9); n > 0; --n) {
      c.push_back(message());
      if (c.back().tool_calls.empty() || pick(2) == 0) continue;
      // A burst of results for the calls just made, in random order.
      std::vector<std::string> ids = ids_;
      std::shuffle(ids.begin(), ids.end(), rng_);
      for (const std::string& id : ids) {
        Message r = make(Role::kTool, "res " + id);
        r.tool_call_id = id;
        c.push_back(r);
      }
    }
    return c;
  }

  RenderOptions options() {
    RenderOptions o;
    o.think = static_cast<ThinkMode>(pick(4));
    o.context_size = pick(2) ? kThinkMaxMinContext : 1000;
    o.variant = pick(2) ? ModelVariant::kV4 : ModelVariant::kV4Flash0731;
    o.add_generation_prompt = pick(3) != 0;
    o.drop_earlier_reasoning = pick(4) != 0;
    return o;
  }

  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }

 private:
  std::string text() {
    static const char* const kTexts[] = {"hi", "what now?", "a\nb", "", "ok.", "日本"};
    return kTexts[pick(6)];
  }

  Message message() {
    switch (pick(8)) {
      case 0: {
        Message m = make(Role::kSystem, "sys " + text());
        if (pick(4) == 0) m.tools = {R"({"type":"function","function":{"name":"f"}})"};
        return m;
      }
      case 1: return make(Role::kDeveloper, "dev " + text());
      case 2:
      case 3: return make(Role::kUser, "u " + text());
      case 4:
      case 5: {
        Message m = make(Role::kAssistant, "a " + text());
        if (pick(2)) m.reasoning = "r " + text();
        if (pick(3) == 0) {
          ids_.clear();
          for (int k = 1 + pick(3); k > 0; --k) {
            ids_.push_back("id" + std::to_string(pick(5)));
            m.tool_calls.push_back({ids_.back(), "f", R"({"x": 1})"});
          }
        }
        return m;
      }
      case 6: {
        Message m = make(Role::kTool, "res " + text());
        m.tool_call_id =
            ids_.empty() ? "none" : ids_[static_cast<size_t>(pick(static_cast<int>(ids_.size())))];
        return m;
      }
      default: return make(Role::kLatestReminder, "rem " + text());
    }
  }

  std::mt19937 rng_;
  std::vector<std::string> ids_;
};

TEST(ChatPrefix, AppendingKeepsThePrefixOutsideTheExceptions) {
  ConversationGenerator gen(99);
  int checked = 0;
  int counts[5] = {};
  for (int iter = 0; iter < 1500; ++iter) {
    const std::vector<Message> conv = gen.conversation();
    const RenderOptions o = gen.options();
    std::vector<Message> c;
    std::string before = render_ok(c, o);
    for (const Message& m : conv) {
      const Exception e = classify_append(c, m, o);
      c.push_back(m);
      const std::string after = render_ok(c, o);
      ++counts[static_cast<int>(e)];
      if (e == Exception::kNone) {
        ++checked;
        ASSERT_TRUE(is_prefix(before, after)) << "iteration " << iter << " message " << c.size();
      } else if (e == Exception::kGenerationPrompt &&
                 (o.think == ThinkMode::kNone || !o.drop_earlier_reasoning || any_tools(c))) {
        // Always observable unless dropping also removes turns (which can coincide with the
        // appended bytes, e.g. a repeated developer message replacing a dropped one).
        ASSERT_FALSE(is_prefix(before, after)) << "iteration " << iter;
      }
      before = after;
    }
  }
  EXPECT_GT(checked, 1000);
  for (int i = 1; i < 5; ++i) EXPECT_GT(counts[i], 0) << "exception " << i << " never exercised";
}

// ---- each exception, explicitly ----
RenderOptions thinking_options() {
  RenderOptions o;
  o.think = ThinkMode::kHigh;
  return o;
}

TEST(ChatPrefix, GenerationPromptIsNotAPrefixOfANewUserTurn) {
  const std::vector<Message> a = {make(Role::kUser, "one")};
  const std::vector<Message> b = {make(Role::kUser, "one"), make(Role::kUser, "two")};
  RenderOptions o;
  EXPECT_FALSE(is_prefix(render_ok(a, o), render_ok(b, o)));
  // Without the generation prompt the merged user turn simply continues.
  o.add_generation_prompt = false;
  EXPECT_TRUE(is_prefix(render_ok(a, o), render_ok(b, o)));
  // The assistant reply itself always extends the prompt.
  o.add_generation_prompt = true;
  std::vector<Message> c = a;
  c.push_back(make(Role::kAssistant, "reply"));
  EXPECT_TRUE(is_prefix(render_ok(a, thinking_options()), render_ok(c, thinking_options())));
}

TEST(ChatPrefix, ReasoningDropBreaksThePrefixOnTheNextUserTurn) {
  Message reply = make(Role::kAssistant, "reply");
  reply.reasoning = "thoughts";
  const std::vector<Message> a = {make(Role::kUser, "one"), reply};
  std::vector<Message> b = a;
  b.push_back(make(Role::kUser, "two"));
  const std::string ra = render_ok(a, thinking_options());
  const std::string rb = render_ok(b, thinking_options());
  EXPECT_FALSE(is_prefix(ra, rb));
  EXPECT_NE(ra.find("<think>thoughts</think>"), std::string::npos);
  EXPECT_EQ(rb.find("thoughts"), std::string::npos);
  // Chat mode, or keeping reasoning, or any tools in the conversation: the prefix holds.
  EXPECT_TRUE(is_prefix(render_ok(a, RenderOptions{}), render_ok(b, RenderOptions{})));
  RenderOptions keep = thinking_options();
  keep.drop_earlier_reasoning = false;
  EXPECT_TRUE(is_prefix(render_ok(a, keep), render_ok(b, keep)));
  Message sys = make(Role::kSystem, "s");
  sys.tools = {R"({"type":"function","function":{"name":"f"}})"};
  std::vector<Message> ta = {sys};
  ta.insert(ta.end(), a.begin(), a.end());
  std::vector<Message> tb = ta;
  tb.push_back(make(Role::kUser, "two"));
  EXPECT_TRUE(is_prefix(render_ok(ta, thinking_options()), render_ok(tb, thinking_options())));
}

TEST(ChatPrefix, ToolResultOrderCanRewriteTheLastTurn) {
  Message call = make(Role::kAssistant, "");
  call.tool_calls = {{"a", "f", "{}"}, {"b", "f", "{}"}};
  Message rb = make(Role::kTool, "B");
  rb.tool_call_id = "b";
  Message ra = make(Role::kTool, "A");
  ra.tool_call_id = "a";
  RenderOptions o;
  o.add_generation_prompt = false;
  const std::vector<Message> first = {make(Role::kUser, "q"), call, rb};
  std::vector<Message> both = first;
  both.push_back(ra);
  EXPECT_FALSE(is_prefix(render_ok(first, o), render_ok(both, o)));
  // Results arriving in call order extend the turn.
  const std::vector<Message> in_order_first = {make(Role::kUser, "q"), call, ra};
  std::vector<Message> in_order = in_order_first;
  in_order.push_back(rb);
  EXPECT_TRUE(is_prefix(render_ok(in_order_first, o), render_ok(in_order, o)));
}

TEST(ChatPrefix, FirstToolsChangeEarlierReasoning) {
  Message reply = make(Role::kAssistant, "reply");
  reply.reasoning = "thoughts";
  const std::vector<Message> a = {make(Role::kUser, "one"), reply, make(Role::kUser, "two"),
                                  make(Role::kAssistant, "r2")};
  std::vector<Message> b = a;
  Message sys = make(Role::kSystem, "late");
  sys.tools = {R"({"type":"function","function":{"name":"f"}})"};
  b.push_back(sys);
  EXPECT_FALSE(is_prefix(render_ok(a, thinking_options()), render_ok(b, thinking_options())));
}

}  // namespace
}  // namespace ds4::chat
