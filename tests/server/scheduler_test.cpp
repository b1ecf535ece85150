// The scheduler on the tiny model (CPU): requests run in FIFO order with usage that counts what
// was really evaluated, a continued conversation reuses the live session (cached tokens), cancel
// stops a request within a step and leaves the session usable, the bounded queue refuses the
// request beyond it, waiting requests run in arrival order, shutdown ends everything with an
// error, and a fixed seed repeats exactly. With a pool of sessions (continuous batching): requests
// batched together into shared engine steps -- at different positions, one finishing and one
// cancelled mid-batch -- produce exactly what each produces alone (greedy and seeded sampling); a
// continued conversation finds its own session among several; the least recently used idle
// session is the one replaced; a request cancelled while it waits never takes a session; requests
// with their own steering scales share no state with others; a long prompt beside a decoding
// request is paced (--itl-target-ms) without changing either output.
#include "serve/scheduler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ds4/chat.h"

namespace ds4::serve {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kWait(60000);  // generous: CI machines are slow and shared
constexpr int kCtx = 1024;

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = Tokenizer::open(DS4_SERVER_MODEL);
    ASSERT_TRUE(t.is_ok()) << t.status().to_string();
    tok_ = std::make_unique<Tokenizer>(std::move(*t));
  }
  std::unique_ptr<Scheduler> start(int max_queue = 8, int sessions = 1,
                                   int batch_tokens = kDefaultBatchTokens, int drafts = 0) {
    EngineOptions eo{.model_path = DS4_SERVER_MODEL, .threads = 2};
    if (drafts > 0) eo.mtp_path = DS4_SERVER_MTP;
    auto e = Engine::open(eo);
    EXPECT_TRUE(e.is_ok()) << e.status().to_string();
    auto s = Scheduler::start(std::move(*e), *tok_,
                              {.n_ctx = kCtx,
                               .prefill_chunk = 16,
                               .max_queue = max_queue,
                               .sessions = sessions,
                               .batch_tokens = batch_tokens,
                               .drafting = {.drafts = drafts, .margin = 0.0f, .source = {}}});
    EXPECT_TRUE(s.is_ok()) << s.status().to_string();
    return std::move(*s);
  }
  // A scheduler of `sessions` sessions taking whole prompts a step (--prefill-chunk 2048), paced
  // at itl_target_ms.
  std::unique_ptr<Scheduler> start_paced(double itl_target_ms, int sessions) {
    auto e = Engine::open({.model_path = DS4_SERVER_MODEL, .threads = 2});
    EXPECT_TRUE(e.is_ok()) << e.status().to_string();
    auto s = Scheduler::start(std::move(*e), *tok_,
                              {.n_ctx = kCtx,
                               .prefill_chunk = 2048,
                               .sessions = sessions,
                               .itl_target_ms = itl_target_ms});
    EXPECT_TRUE(s.is_ok()) << s.status().to_string();
    return std::move(*s);
  }
  // A prompt of 300 words (several quanta of prompt rows).
  Request long_chat(int max_tokens, int vocabulary = 13) {
    std::string words;
    for (int i = 0; i < 300; ++i) words += "word" + std::to_string(i % vocabulary) + " ";
    return chat(words, max_tokens);
  }
  Request chat(const std::string& user, int max_tokens, uint64_t seed = 7) {
    std::vector<chat::Message> msgs{{.role = chat::Role::kUser, .content = user}};
    auto text = chat::render(msgs, {.think = chat::ThinkMode::kNone, .context_size = kCtx});
    EXPECT_TRUE(text.is_ok());
    Request r;
    r.rendered = *text;
    r.prompt = tok_->encode(r.rendered, SpecialTokens::kRecognize);
    r.sampling.seed = seed;
    r.max_tokens = max_tokens;
    return r;
  }
  // Drains a ticket to its kDone event; the text events are concatenated into *text.
  static Event drain(Ticket& t, std::string* text = nullptr) {
    for (;;) {
      auto e = t.next(kWait);
      if (!e)
        return Event{.kind = EventKind::kDone,
                     .finish = FinishReason::kError,
                     .error = Status::internal("timed out")};
      if (e->kind == EventKind::kDone) return *e;
      if (text && e->kind == EventKind::kText) *text += e->text;
    }
  }
  // The history sent back after `done`: its output, EOS, and a new user turn.
  Request continued(const std::string& rendered, const Event& done, const std::string& user,
                    int max_tokens) {
    Request r;
    r.rendered = rendered + done.text + std::string(chat::kEos) + std::string(chat::kUserTag) +
                 user + std::string(chat::kAssistantTag) + "</think>";
    r.prompt = tok_->encode(r.rendered, SpecialTokens::kRecognize);
    r.sampling.seed = 7;  // fixed: its output is continued in turn
    r.max_tokens = max_tokens;
    return r;
  }
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(SchedulerTest, RunsARequestAndReportsUsage) {
  auto s = start();
  Request r = chat("Hello", 8);
  const int n_prompt = static_cast<int>(r.prompt.size());
  auto t = s->submit(std::move(r));
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  std::string text;
  const Event done = drain(**t, &text);
  EXPECT_TRUE(done.error.is_ok()) << done.error.to_string();
  EXPECT_TRUE(done.finish == FinishReason::kLength || done.finish == FinishReason::kStop);
  EXPECT_EQ(done.usage.prompt_tokens, n_prompt);
  EXPECT_EQ(done.usage.cached_tokens, 0);
  EXPECT_GE(done.usage.completion_tokens, 1);
  EXPECT_LE(done.usage.completion_tokens, 8);
  if (done.finish == FinishReason::kLength) {
    EXPECT_EQ(done.usage.completion_tokens, 8);
  }
  EXPECT_EQ(done.text.substr(0, text.size()), text);  // the raw output starts with the content
}

TEST_F(SchedulerTest, SameSeedSameOutput) {
  auto s = start();
  std::string a, b;
  drain(**s->submit(chat("Count", 12, 42)), &a);
  drain(**s->submit(chat("Count", 12, 42)), &b);
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

TEST_F(SchedulerTest, ContinuedConversationReusesTheLiveSession) {
  auto s = start();
  Request first = chat("Tell me something", 6);
  const std::string rendered = first.rendered;
  const size_t n_first = first.prompt.size();
  const Event d1 = drain(**s->submit(std::move(first)));
  ASSERT_TRUE(d1.error.is_ok());
  // The client sends the history back: the answer, EOS, and a new user turn.
  Request second;
  second.rendered = rendered + d1.text + std::string(chat::kEos) + std::string(chat::kUserTag) +
                    "More" + std::string(chat::kAssistantTag) + "</think>";
  second.prompt = tok_->encode(second.rendered, SpecialTokens::kRecognize);
  second.max_tokens = 4;
  const Event d2 = drain(**s->submit(std::move(second)));
  ASSERT_TRUE(d2.error.is_ok()) << d2.error.to_string();
  // Everything evaluated for the first request (its prompt and all but its last sampled token).
  EXPECT_GE(d2.usage.cached_tokens, static_cast<int>(n_first));
  EXPECT_LT(d2.usage.cached_tokens, d2.usage.prompt_tokens);
}

TEST_F(SchedulerTest, CancelStopsWithinAStepAndTheSessionStaysUsable) {
  auto s = start();
  Request r = chat("Write a long story", kCtx);
  const std::string rendered = r.rendered;
  const int n_prompt = static_cast<int>(r.prompt.size());
  auto t = s->submit(std::move(r));
  ASSERT_TRUE(t.is_ok());
  ASSERT_TRUE((*t)->next(kWait).has_value());  // generation is under way
  (*t)->cancel();
  const Event done = drain(**t);
  EXPECT_EQ(done.finish, FinishReason::kCancelled);
  EXPECT_LT(done.usage.completion_tokens, 100);
  // The session holds exactly what was evaluated: a request continuing the cancelled output
  // reuses all of it (the CPU engine reuses only an exact continuation of the live tokens).
  Request next;
  next.rendered = rendered + done.text + " and more";
  next.prompt = tok_->encode(next.rendered, SpecialTokens::kRecognize);
  next.max_tokens = 3;
  const Event d = drain(**s->submit(std::move(next)));
  EXPECT_TRUE(d.error.is_ok()) << d.error.to_string();
  EXPECT_EQ(d.usage.completion_tokens, 3);
  EXPECT_GE(d.usage.cached_tokens, n_prompt);
}

TEST_F(SchedulerTest, BoundedQueueRefusesAndShutdownEndsEverything) {
  auto s = start(/*max_queue=*/1);
  auto running = s->submit(chat("one", kCtx));
  ASSERT_TRUE(running.is_ok());
  ASSERT_TRUE((*running)->next(kWait).has_value());  // admitted: the queue is empty again
  auto waiting = s->submit(chat("two", 4));
  ASSERT_TRUE(waiting.is_ok());
  auto refused = s->submit(chat("three", 4));
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s->stats().queued, 1);
  EXPECT_EQ(s->stats().running, 1);
  s->shutdown();
  EXPECT_EQ(drain(**running).finish, FinishReason::kError);
  const Event w = drain(**waiting);
  EXPECT_EQ(w.finish, FinishReason::kError);
  EXPECT_EQ(w.error.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s->submit(chat("four", 4)).status().code(), StatusCode::kUnavailable);
}

TEST_F(SchedulerTest, PromptLongerThanTheContextIsRefused) {
  auto s = start();
  Request r = chat("x", 4);
  r.prompt.assign(kCtx, r.prompt.back());
  auto t = s->submit(std::move(r));
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(t.status().message().find("1024"), std::string::npos);
}

TEST_F(SchedulerTest, WaitingRequestsRunInArrivalOrder) {
  auto s = start();
  std::vector<std::shared_ptr<Ticket>> tickets;
  for (int i = 0; i < 4; ++i) {
    auto t = s->submit(chat("request " + std::to_string(i), 3));
    ASSERT_TRUE(t.is_ok());
    tickets.push_back(*t);
  }
  EXPECT_EQ(drain(*tickets[3]).usage.completion_tokens, 3);
  // One session: the last request ran after every earlier one had finished.
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(tickets[i]->finished()) << i;
}

// ---- A pool of sessions and continuous batching ----

// Prompts of different lengths (their sessions stand at different positions in every shared
// step), greedy and seeded sampling, one request short enough to finish while the others still
// decode, one submitted while the others decode (its prefill shares their steps) and one
// cancelled mid-batch.
TEST_F(SchedulerTest, BatchedRequestsProduceExactlyWhatEachProducesAlone) {
  std::vector<Request> reqs;
  reqs.push_back(chat("Hello", 20, 11));  // seeded sampling
  reqs.push_back(chat(
      "Please write a short poem about the sea and the wind at night, with a boat, a lighthouse, "
      "a storm that passes before dawn and the fishermen who come home with the tide",
      20, 12));
  reqs.back().sampling.temperature = 0.0f;   // greedy
  reqs.push_back(chat("Stop soon", 3, 13));  // finishes mid-batch
  reqs.push_back(
      chat("A fourth prompt, submitted once the others are decoding, whose prefill is "
           "split into chunks that share steps with their decode rows",
           16, 14));
  reqs.push_back(chat("This one is cancelled while the others run", 40, 15));

  // Alone: one session, each request drained before the next is submitted.
  std::vector<Event> alone;
  uint64_t alone_steps = 0;
  {
    auto s = start();
    for (const Request& r : reqs) alone.push_back(drain(**s->submit(r)));
    alone_steps = s->stats().steps;
  }
  for (size_t i = 0; i + 1 < reqs.size(); ++i) {
    ASSERT_TRUE(alone[i].error.is_ok()) << i << ": " << alone[i].error.to_string();
    ASSERT_GE(alone[i].usage.completion_tokens, 1) << i;
  }
  EXPECT_NE(alone[0].text, alone[1].text);  // the requests really differ

  // Batched: four sessions; a step budget of 12 rows, so prefills are cut to what the decode
  // rows leave and every step mixes both.
  auto s = start(/*max_queue=*/8, /*sessions=*/4, /*batch_tokens=*/12);
  std::vector<std::shared_ptr<Ticket>> t(reqs.size());
  for (size_t i : {0u, 1u, 2u, 4u}) t[i] = *s->submit(reqs[i]);
  ASSERT_TRUE(t[0]->next(kWait).has_value());  // decoding is under way
  t[3] = *s->submit(reqs[3]);
  ASSERT_TRUE(t[4]->next(kWait).has_value());
  t[4]->cancel();  // mid-batch, after its first output
  std::vector<Event> batched(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) batched[i] = drain(*t[i]);
  const SchedulerStats st = s->stats();

  for (size_t i = 0; i + 1 < reqs.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    EXPECT_TRUE(batched[i].error.is_ok()) << batched[i].error.to_string();
    EXPECT_EQ(batched[i].finish, alone[i].finish);
    EXPECT_EQ(batched[i].usage.prompt_tokens, alone[i].usage.prompt_tokens);
    EXPECT_EQ(batched[i].usage.completion_tokens, alone[i].usage.completion_tokens);
    EXPECT_EQ(batched[i].text, alone[i].text);  // the raw output: every sampled token's bytes
  }
  EXPECT_EQ(batched[2].usage.completion_tokens, 3);
  // The cancelled request stopped early, and what it produced is what it produces alone.
  EXPECT_EQ(batched[4].finish, FinishReason::kCancelled);
  EXPECT_LT(batched[4].usage.completion_tokens, alone[4].usage.completion_tokens);
  EXPECT_EQ(alone[4].text.substr(0, batched[4].text.size()), batched[4].text);
  // The requests shared steps: far fewer engine calls than running them one after another.
  EXPECT_LT(st.steps, alone_steps);
  EXPECT_EQ(st.running, 0);
  EXPECT_EQ(st.free, 4);
}

TEST_F(SchedulerTest, StatsCountTheSessions) {
  auto s = start(/*max_queue=*/8, /*sessions=*/3);
  const SchedulerStats st = s->stats();
  EXPECT_EQ(st.sessions, 3);
  EXPECT_EQ(st.free, 3);
  EXPECT_EQ(st.running, 0);
  EXPECT_EQ(st.queued, 0);
}

TEST_F(SchedulerTest, BatchTokensBelowTheSessionCountIsRefused) {
  EngineOptions eo{.model_path = DS4_SERVER_MODEL, .threads = 2};
  auto e = Engine::open(eo);
  ASSERT_TRUE(e.is_ok());
  auto s =
      Scheduler::start(std::move(*e), *tok_, {.n_ctx = kCtx, .sessions = 4, .batch_tokens = 3});
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(SchedulerTest, AConversationFindsItsSessionAndTheLeastRecentlyUsedIsReplaced) {
  auto s = start(/*max_queue=*/8, /*sessions=*/2);
  Request a = chat("Tell me about apples", 6);
  Request b = chat("Something else entirely", 6);
  const std::string ra = a.rendered, rb = b.rendered;
  const size_t na = a.prompt.size(), nb = b.prompt.size();
  const Event da = drain(**s->submit(std::move(a)));
  const Event db = drain(**s->submit(std::move(b)));  // the free session, not A's
  ASSERT_TRUE(da.error.is_ok() && db.error.is_ok());
  // A's continuation goes to A's session, although B's was used last.
  Request a2 = continued(ra, da, "More", 4);
  const std::string ra2 = a2.rendered;
  const Event da2 = drain(**s->submit(std::move(a2)));
  ASSERT_TRUE(da2.error.is_ok()) << da2.error.to_string();
  EXPECT_GE(da2.usage.cached_tokens, static_cast<int>(na));
  // A new conversation replaces the least recently used idle session: B's.
  const Event dc = drain(**s->submit(chat("A third topic", 4)));
  EXPECT_EQ(dc.usage.cached_tokens, 0);
  const Event da3 = drain(**s->submit(continued(ra2, da2, "Again", 3)));
  EXPECT_GE(da3.usage.cached_tokens, da2.usage.prompt_tokens);
  const Event db2 = drain(**s->submit(continued(rb, db, "Back to B", 3)));
  EXPECT_TRUE(db2.error.is_ok());
  EXPECT_EQ(db2.usage.cached_tokens, 0);  // B's session went to the third conversation
  EXPECT_GT(db2.usage.prompt_tokens, static_cast<int>(nb));
}

TEST_F(SchedulerTest, ARequestCancelledWhileWaitingNeverTakesASession) {
  auto s = start();
  auto running = s->submit(chat("Write a long story", kCtx));
  ASSERT_TRUE(running.is_ok());
  ASSERT_TRUE((*running)->next(kWait).has_value());
  auto waiting = s->submit(chat("never runs", 4));
  ASSERT_TRUE(waiting.is_ok());
  (*waiting)->cancel();
  const Event w = drain(**waiting);
  EXPECT_EQ(w.finish, FinishReason::kCancelled);
  EXPECT_EQ(w.usage.completion_tokens, 0);
  EXPECT_EQ(w.usage.cached_tokens, 0);
  (*running)->cancel();
  drain(**running);
  const SchedulerStats st = s->stats();
  EXPECT_EQ(st.running, 0);
  EXPECT_EQ(st.queued, 0);
}

// choose_slot keeps each idle session's decoded text between admissions (scheduler.h live_text):
// the text-prefix rule must still see the session's current tokens. A request that continues the
// text of the session's latest tokens reuses exactly them and tokenizes only its own suffix; a
// stale text (the one from before the previous request, or from before the session was replaced)
// would plan a wrong prompt: the earlier turn's bytes twice, or another conversation's tokens.
TEST_F(SchedulerTest, TheTextPrefixRuleSeesTheSessionsCurrentText) {
  auto s = start();
  // A prompt whose tokens differ from the live ones at once, so only the text rule can hold.
  const auto text_only = [&](const std::string& rendered, const std::string& out) {
    Request r;
    r.rendered = rendered;
    r.prompt = tok_->encode("x" + rendered, SpecialTokens::kRecognize);
    r.output.forced = tok_->encode(out, SpecialTokens::kRecognize);
    r.max_tokens = static_cast<int>(r.output.forced.size());
    return r;
  };
  Request a = chat("Tell me something", 4);
  a.output.forced = tok_->encode(" one two three", SpecialTokens::kRecognize);
  a.max_tokens = static_cast<int>(a.output.forced.size());
  std::vector<TokenId> live = a.prompt;  // the session's tokens after each request
  live.insert(live.end(), a.output.forced.begin(),
              a.output.forced.end() - 1);  // the last one is not evaluated
  ASSERT_TRUE(drain(**s->submit(std::move(a))).error.is_ok());
  for (const std::string suffix : {" and more", " again", " and a third time"}) {
    Request r = text_only(tok_->decode(live) + suffix, " fine, thanks");
    const std::vector<TokenId> added = tok_->encode(suffix, SpecialTokens::kRecognize);
    const std::vector<TokenId> out = r.output.forced;
    const Event d = drain(**s->submit(std::move(r)));
    ASSERT_TRUE(d.error.is_ok()) << d.error.to_string();
    EXPECT_EQ(d.usage.cached_tokens, static_cast<int>(live.size())) << suffix;
    EXPECT_EQ(d.usage.prompt_tokens, static_cast<int>(live.size() + added.size())) << suffix;
    live.insert(live.end(), added.begin(), added.end());
    live.insert(live.end(), out.begin(), out.end() - 1);
  }
  // Another conversation replaces the session's tokens; its continuation is planned from them.
  Request b = chat("Something else entirely", 4);
  b.output.forced = tok_->encode(" no", SpecialTokens::kRecognize);
  b.max_tokens = static_cast<int>(b.output.forced.size());
  live = b.prompt;
  live.insert(live.end(), b.output.forced.begin(), b.output.forced.end() - 1);
  ASSERT_EQ(drain(**s->submit(std::move(b))).usage.cached_tokens, 0);
  const Event d = drain(**s->submit(text_only(tok_->decode(live) + " yes", " ok")));
  ASSERT_TRUE(d.error.is_ok()) << d.error.to_string();
  EXPECT_EQ(d.usage.cached_tokens, static_cast<int>(live.size()));
  EXPECT_EQ(d.usage.prompt_tokens,
            static_cast<int>(live.size() + tok_->encode(" yes", SpecialTokens::kRecognize).size()));
}

// §1.13 rule 6, §2.7: a tool-less chat turn that reasoned leaves its visible transcript bound to
// the session; the client's next request (the answer without its reasoning, and a new question)
// reuses the whole session, reasoning included, and tokenizes only its new suffix. The binding is
// the chat protocols' only: the same text as a Responses request is a miss.
TEST_F(SchedulerTest, AThinkingChatTurnIsContinuedThroughItsVisibleTranscript) {
  auto s = start();
  const std::string answer = "It is sunny.";
  std::vector<chat::Message> msgs{{.role = chat::Role::kUser, .content = "Weather?"}};
  const auto render = [&](Protocol protocol) {
    auto text = chat::render(msgs, {.think = chat::ThinkMode::kHigh, .context_size = kCtx});
    EXPECT_TRUE(text.is_ok());
    Request r;
    r.rendered = *text;
    r.prompt = tok_->encode(r.rendered, SpecialTokens::kRecognize);
    r.output.thinking = true;
    r.protocol = protocol;
    r.max_tokens = 8;
    return r;
  };
  Request first = render(Protocol::kChat);
  first.output.forced = tok_->encode("Let me think.</think>" + answer, SpecialTokens::kRecognize);
  first.output.forced.push_back(tok_->special_ids().eos);
  first.max_tokens = static_cast<int>(first.output.forced.size()) + 4;
  const size_t frontier = first.prompt.size() + first.output.forced.size() - 1;
  msgs.push_back({.role = chat::Role::kAssistant, .content = answer});
  msgs.push_back({.role = chat::Role::kUser, .content = "And tomorrow?"});
  for (const Protocol next : {Protocol::kChat, Protocol::kResponses}) {
    const Event d1 = drain(**s->submit(first));
    ASSERT_TRUE(d1.error.is_ok()) << d1.error.to_string();
    ASSERT_EQ(d1.finish, FinishReason::kStop);
    Request second = render(next);
    const Event d2 = drain(**s->submit(std::move(second)));
    ASSERT_TRUE(d2.error.is_ok()) << d2.error.to_string();
    if (next == Protocol::kChat) {
      EXPECT_EQ(d2.usage.cached_tokens, static_cast<int>(frontier));
      EXPECT_GT(d2.usage.prompt_tokens, static_cast<int>(frontier));
    } else {
      EXPECT_LT(d2.usage.cached_tokens, static_cast<int>(first.prompt.size()));
    }
  }
}

// --chat-template ds4 keeps earlier reasoning in tool context, also without declared tools
// (Request::keeps_reasoning): the client's next request renders the finished turn as "<think>" +
// its (empty) reasoning + "</think>" + the answer, so a Responses turn binds its transcript with
// the "<think>" kept and the next request reuses the whole session. The same request marked as
// not keeping it (the official rule, or before keeps_reasoning) binds the wrong text: a miss past
// the prompt.
TEST_F(SchedulerTest, AKeptReasoningTranscriptKeepsItsThinkStart) {
  const std::string answer = "It is sunny.";
  chat::Message call{.role = chat::Role::kAssistant};
  call.tool_calls = {{"call_1", "get_weather", R"({"city":"Rome"})"}};
  std::vector<chat::Message> msgs{{.role = chat::Role::kUser, .content = "Weather?"},
                                  call,
                                  {.role = chat::Role::kTool, .content = "sunny"}};
  ASSERT_TRUE(chat::keeps_earlier_reasoning(msgs, chat::Template::kDs4));
  const auto render = [&](bool keeps) {
    auto text = chat::render(msgs, {.think = chat::ThinkMode::kHigh, .context_size = kCtx},
                             chat::Template::kDs4);
    EXPECT_TRUE(text.is_ok());
    Request r;
    r.rendered = *text;
    r.prompt = tok_->encode(r.rendered, SpecialTokens::kRecognize);
    r.output.thinking = true;
    r.protocol = Protocol::kResponses;
    r.keeps_reasoning = keeps;
    r.max_tokens = 8;
    return r;
  };
  for (const bool keeps : {true, false}) {
    auto s = start();  // a fresh pool: nothing of the other run to reuse
    msgs.resize(3);
    Request first = render(keeps);
    first.output.forced = tok_->encode("Let me think.</think>" + answer, SpecialTokens::kRecognize);
    first.output.forced.push_back(tok_->special_ids().eos);
    first.max_tokens = static_cast<int>(first.output.forced.size()) + 4;
    const size_t frontier = first.prompt.size() + first.output.forced.size() - 1;
    const size_t prompt = first.prompt.size();
    const Event d1 = drain(**s->submit(std::move(first)));
    ASSERT_TRUE(d1.error.is_ok()) << d1.error.to_string();
    ASSERT_EQ(d1.finish, FinishReason::kStop);
    msgs.push_back({.role = chat::Role::kAssistant, .content = answer});
    msgs.push_back({.role = chat::Role::kUser, .content = "And tomorrow?"});
    Request second = render(keeps);
    ASSERT_NE(second.rendered.find("<think></think>" + answer), std::string::npos);
    const Event d2 = drain(**s->submit(std::move(second)));
    ASSERT_TRUE(d2.error.is_ok()) << d2.error.to_string();
    if (keeps) {
      EXPECT_EQ(d2.usage.cached_tokens, static_cast<int>(frontier));
    } else {
      EXPECT_LE(d2.usage.cached_tokens, static_cast<int>(prompt));
    }
  }
}

}  // namespace
}  // namespace ds4::serve

namespace ds4::serve {
namespace {

// MTP drafting (issue 51): a greedy request that decodes alone drafts and verifies, and its output
// is the output without drafts; usage counts the drafts. Two requests decoding side by side both
// draft, their verifications in one step, each saying what it says without drafts; with more
// than kDraftMaxStreams (2) decoding, drafting pauses. A sampled request with drafts runs to its
// limit.
TEST_F(SchedulerTest, DraftingLeavesGreedyOutputAsItIsAndTurnsOffInABatch) {
  Request greedy = chat("Please write a short poem about the sea", 24, 3);
  greedy.sampling.temperature = 0.0f;
  Request other = chat("Another request of the same length", 24, 4);
  other.sampling.temperature = 0.0f;
  Request third = chat("A third request, one more of them", 24, 5);
  third.sampling.temperature = 0.0f;
  Event plain, plain_next, plain_other, plain_third;
  Request next;
  {
    auto s = start();
    plain_other = drain(**s->submit(other));
    plain_third = drain(**s->submit(third));
    plain = drain(**s->submit(greedy));
    // The conversation continued: the live session's prefix is reused.
    next = continued(greedy.rendered, plain, "And another one", 16);
    next.sampling.temperature = 0.0f;
    plain_next = drain(**s->submit(next));
  }
  ASSERT_TRUE(plain.error.is_ok()) << plain.error.to_string();
  EXPECT_EQ(plain.usage.draft_steps, 0);
  auto s = start(8, 3, kDefaultBatchTokens, /*drafts=*/3);
  const Event alone = drain(**s->submit(greedy));
  ASSERT_TRUE(alone.error.is_ok()) << alone.error.to_string();
  EXPECT_EQ(alone.text, plain.text);
  EXPECT_EQ(alone.finish, plain.finish);
  EXPECT_EQ(alone.usage.completion_tokens, plain.usage.completion_tokens);
  EXPECT_GT(alone.usage.draft_steps, 0);
  EXPECT_GE(alone.usage.draft_tokens, alone.usage.draft_steps);
  EXPECT_LE(alone.usage.accepted_draft_tokens, alone.usage.draft_tokens);
  if (alone.usage.accepted_draft_tokens == 0) {
    // Random weights: the block's drafts are never the model's. After 16 verifications that kept
    // nothing the request stops drafting (scheduler_draft.cpp's acceptance switch).
    EXPECT_EQ(alone.usage.draft_steps, 16);
  }
  const Event alone_next = drain(**s->submit(next));
  EXPECT_GT(alone_next.usage.cached_tokens, 0) << "the prefix was reused";
  EXPECT_GE(alone_next.usage.cached_tokens, plain_next.usage.cached_tokens);
  EXPECT_EQ(alone_next.text, plain_next.text);
  EXPECT_GT(alone_next.usage.draft_steps, 0);

  // Two at once: both draft, their verifications sharing each step, and both say what they say
  // without drafts.
  auto ta = *s->submit(greedy);
  auto tb = *s->submit(other);
  const Event da = drain(*ta), db = drain(*tb);
  ASSERT_TRUE(da.error.is_ok() && db.error.is_ok());
  EXPECT_EQ(da.text, plain.text);
  EXPECT_EQ(db.text, plain_other.text);
  EXPECT_GT(da.usage.draft_steps, 0);
  EXPECT_GT(db.usage.draft_steps, 0);
  // Three at once: drafting pauses while all three decode.
  auto t1 = *s->submit(greedy);
  auto t2 = *s->submit(other);
  auto t3 = *s->submit(third);
  const Event d1 = drain(*t1), d2 = drain(*t2), d3 = drain(*t3);
  EXPECT_EQ(d1.text, plain.text);
  EXPECT_EQ(d2.text, plain_other.text);
  EXPECT_EQ(d3.text, plain_third.text);
  EXPECT_LT(d1.usage.draft_steps + d2.usage.draft_steps + d3.usage.draft_steps,
            da.usage.draft_steps + db.usage.draft_steps)
      << "three requests decoding together draft only while at most two decode";

  Request sampled = chat("Tell me a story", 20, 9);
  sampled.sampling.temperature = 1.0f;
  const Event ds = drain(**s->submit(sampled));
  EXPECT_TRUE(ds.error.is_ok()) << ds.error.to_string();
  EXPECT_GE(ds.usage.completion_tokens, 1);
  EXPECT_LE(ds.usage.completion_tokens, 20);
  EXPECT_GT(ds.usage.draft_steps, 0);
}

// Directional steering per request (the "dir_steering" extension): a request with its own scales
// never continues a session computed with others (nothing cached), repeats itself, and leaves
// the plain requests' output as a server without a direction file gives it.
TEST_F(SchedulerTest, RequestsSteerByTheirOwnScalesAndShareNoState) {
  auto probe = Engine::open({.model_path = DS4_SERVER_MODEL, .threads = 2});
  ASSERT_TRUE(probe.is_ok());
  const size_t floats = size_t((*probe)->info().n_layer) * size_t((*probe)->info().n_embd);
  const std::string file = ::testing::TempDir() + "sched_dirs_" + std::to_string(getpid());
  {
    std::vector<float> d(floats);
    for (size_t i = 0; i < floats; ++i) d[i] = (i * 7919 % 13 < 6 ? 1.0f : -1.0f) / 16.0f;
    FILE* f = std::fopen(file.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(d.data(), sizeof(float), floats, f), floats);
    std::fclose(f);
  }
  // A greedy request of `r` with scales `st`: its text, its end, its cached tokens.
  auto run = [&](Scheduler& s, Request r, std::optional<Steering> st) {
    r.sampling.temperature = 0;
    r.steering = st;
    std::string text;
    Event done = drain(**s.submit(std::move(r)), &text);
    EXPECT_TRUE(done.error.is_ok()) << done.error.to_string();
    return std::pair{text, done};
  };
  const Request first = chat("Tell me something", 10);
  auto plain_server = start();
  const auto [want, d0] = run(*plain_server, first, std::nullopt);
  EngineOptions eo{.model_path = DS4_SERVER_MODEL, .threads = 2};
  eo.steering_file = file;
  auto e = Engine::open(eo);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  auto s = Scheduler::start(std::move(*e), *tok_,
                            {.n_ctx = kCtx, .prefill_chunk = 16, .max_queue = 8, .sessions = 1});
  ASSERT_TRUE(s.is_ok());
  const auto [plain, d1] = run(**s, first, std::nullopt);
  EXPECT_EQ(plain, want) << "a file at scale 0 changes nothing";
  // The plain answer's conversation, continued with scales of its own: nothing reused.
  const Request next = continued(first.rendered, d1, "More", 6);
  const auto [steered, d2] = run(**s, next, Steering{.ffn = 4.0f});
  {  // the control: the same continuation at the server's scales continues the session
    auto ctl = start();
    run(*ctl, first, std::nullopt);
    EXPECT_GT(run(*ctl, next, std::nullopt).second.usage.cached_tokens, 0);
  }
  EXPECT_EQ(d2.usage.cached_tokens, 0) << "the plain session was reused for steered scales";
  // The steered answer's conversation continued with the same scales continues its session; with
  // the server's scales it starts again.
  const Request third = continued(next.rendered, d2, "Again", 4);
  const auto [kept, d3] = run(**s, third, Steering{.ffn = 4.0f});
  EXPECT_GT(d3.usage.cached_tokens, 0) << "the same scales continue their own session";
  const auto [fresh, d4] = run(**s, third, std::nullopt);
  EXPECT_EQ(d4.usage.cached_tokens, 0);
  // Steering changes the answer: the steered continuation against the same one run plainly.
  auto plain_again = start();
  const auto [unsteered, d5] = run(*plain_again, next, std::nullopt);
  EXPECT_NE(steered, unsteered);
  std::remove(file.c_str());
}

// Beside a decoding request, a long prompt is cut into the pacer's quanta (a target far below any
// step's time leaves the minimum); alone, or with pacing off, it is not paced; and what either
// request produces is what it produces alone.
TEST_F(SchedulerTest, ALongPromptBesideADecodingRequestIsPacedAndChangesNothing) {
  const Request longer = long_chat(4);
  ASSERT_GT(longer.prompt.size(), 2 * kFirstPrefillQuantum);
  const Request decoder = chat("Count slowly", 40);
  auto open = [&](double itl_target_ms) { return start_paced(itl_target_ms, 2); };
  struct Run {
    Event decoder, longer;
    std::string decoder_text;
    size_t quantum = 0;
  };
  // The decoder first; once its first token is out, the long prompt beside it.
  auto beside = [&](double itl_target_ms) {
    auto s = open(itl_target_ms);
    Run r;
    auto td = *s->submit(decoder);
    auto first = td->next(kWait);
    EXPECT_TRUE(first.has_value());
    if (first && first->kind == EventKind::kText) r.decoder_text = first->text;
    r.longer = drain(**s->submit(longer));
    r.quantum = s->stats().prefill_quantum;
    r.decoder = drain(*td, &r.decoder_text);
    return r;
  };
  auto plain = open(1e-3);
  const Event long_alone = drain(**plain->submit(longer));
  // One step for the whole prompt (--prefill-chunk 2048), then one per token: not paced.
  EXPECT_LE(plain->stats().steps, 1u + 4u) << "a prompt alone was paced";
  std::string decoder_alone;
  const Event d = drain(**plain->submit(decoder), &decoder_alone);
  ASSERT_TRUE(long_alone.error.is_ok() && d.error.is_ok());

  for (const double target : {1e-3, 0.0}) {
    SCOPED_TRACE("itl target " + std::to_string(target) + " ms");
    const Run r = beside(target);
    ASSERT_EQ(r.decoder.usage.completion_tokens, 40) << "the decoder ended before the prompt";
    EXPECT_EQ(r.quantum, target > 0 ? kMinPrefillQuantum : kFirstPrefillQuantum);
    EXPECT_EQ(r.longer.text, long_alone.text);
    EXPECT_EQ(r.longer.usage.prompt_tokens, long_alone.usage.prompt_tokens);
    EXPECT_EQ(r.decoder_text, decoder_alone);
  }
}

// A burst (issue 55: time to first token at 16 clients): two prompts arriving beside one decoding
// request outnumber it, so their steps are not paced: both first tokens come within a few steps,
// where prompts of more than two quanta each, paced at the minimum (a target far below any step's
// time), would take 16 steps or more. What each request produces is what it produces alone.
TEST_F(SchedulerTest, PromptsOutnumberingTheDecodingRequestsAreNotPaced) {
  const Request a = long_chat(4), b = long_chat(4, 11);
  ASSERT_GT(a.prompt.size(), 2 * kFirstPrefillQuantum);
  ASSERT_GT(b.prompt.size(), 2 * kFirstPrefillQuantum);
  const Request decoder = chat("Count slowly", 16);  // more tokens than the burst's <= 8 steps
  std::string a_alone, b_alone, decoder_alone;
  {
    auto plain = start_paced(1e-3, 1);
    ASSERT_TRUE(drain(**plain->submit(a), &a_alone).error.is_ok());
    ASSERT_TRUE(drain(**plain->submit(b), &b_alone).error.is_ok());
    ASSERT_TRUE(drain(**plain->submit(decoder), &decoder_alone).error.is_ok());
  }
  auto s = start_paced(1e-3, 3);
  auto td = *s->submit(decoder);
  std::string decoder_text;
  auto first = td->next(kWait);
  ASSERT_TRUE(first.has_value());
  if (first->kind == EventKind::kText) decoder_text = first->text;
  const uint64_t steps0 = s->stats().steps;
  auto ta = *s->submit(a);
  auto tb = *s->submit(b);
  std::string a_text, b_text;
  auto fa = ta->next(kWait);
  auto fb = tb->next(kWait);
  const uint64_t steps = s->stats().steps - steps0;
  ASSERT_TRUE(fa.has_value() && fb.has_value());
  EXPECT_LE(steps, 8u) << "the burst's prompts were cut into the pacer's quanta";
  if (fa->kind == EventKind::kText) a_text = fa->text;
  if (fb->kind == EventKind::kText) b_text = fb->text;
  if (fa->kind != EventKind::kDone) drain(*ta, &a_text);
  if (fb->kind != EventKind::kDone) drain(*tb, &b_text);
  const Event d = drain(*td, &decoder_text);
  ASSERT_EQ(d.usage.completion_tokens, 16) << "the decoder ended before the prompts";
  EXPECT_EQ(a_text, a_alone);
  EXPECT_EQ(b_text, b_alone);
  EXPECT_EQ(decoder_text, decoder_alone);
}

}  // namespace
}  // namespace ds4::serve
