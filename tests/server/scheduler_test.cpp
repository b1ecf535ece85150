// The scheduler on the tiny model (CPU): requests run in FIFO order with usage that counts what
// was really evaluated, a continued conversation reuses the live session (cached tokens), cancel
// stops a request within a step and leaves the session usable, the bounded queue refuses the
// request beyond it, waiting requests run in arrival order, shutdown ends everything with an
// error, and a fixed seed repeats exactly.
#include "serve/scheduler.h"

#include <gtest/gtest.h>

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
  std::unique_ptr<Scheduler> start(int max_queue = 8) {
    EngineOptions eo{.model_path = DS4_SERVER_MODEL, .threads = 2};
    auto e = Engine::open(eo);
    EXPECT_TRUE(e.is_ok()) << e.status().to_string();
    auto s = Scheduler::start(std::move(*e), *tok_,
                              {.n_ctx = kCtx, .prefill_chunk = 16, .max_queue = max_queue});
    EXPECT_TRUE(s.is_ok()) << s.status().to_string();
    return std::move(*s);
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

}  // namespace
}  // namespace ds4::serve
