// The scheduler with a disk KV cache on the tiny model (CPU), features.md §3.3 and §3.5: a cold
// miss saves the prompt up to its cold boundary and, when the scheduler stops, the live session
// (shutdown); a new scheduler on the same directory loads the file, reuses exactly its tokens and
// samples the same output as the cold run (the restored state is the computed one); continued
// saves land on multiples of the step; a sound file whose payload does not load is removed and
// the request runs from scratch with the right output; a damaged file (a flipped or NaN payload
// byte, another header token count, a truncated or a version-1 file: issue 47 item 3) is removed
// with one log line, nothing of it counts as cached, and the request is answered as a miss.
#include "serve/disk_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>

#include "ds4/chat.h"
#include "gguf/test_util.h"
#include "serve/scheduler.h"

namespace ds4::serve {
namespace {

using gguf::testing::TempDir;
using std::chrono::milliseconds;
constexpr milliseconds kWait(60000);
constexpr int kCtx = 1024;

struct File {
  std::string name;
  kv::KvcHeader header;
};

std::vector<File> files(const std::string& dir) {
  std::vector<File> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".kv") continue;
    const auto bytes = gguf::testing::read_bytes(e.path().string());
    auto h = kv::decode_kvc_header(bytes);
    EXPECT_TRUE(h.is_ok()) << e.path();
    if (h.is_ok()) out.push_back({e.path().filename().string(), *h});
  }
  return out;
}

// The directory's cold-save file, if it has one.
std::optional<File> cold_file(const std::string& dir) {
  for (File& f : files(dir)) {
    if (f.header.reason == kv::SaveReason::kCold) return std::move(f);
  }
  return std::nullopt;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

// A cache file re-encoded after `change` edited its header or payload: a sound file (its checksums
// match) that says something else, as a writer's bug could leave one.
std::vector<uint8_t> reencoded(
    const std::vector<uint8_t>& file,
    const std::function<void(kv::KvcHeader&, std::vector<uint8_t>&)>& change) {
  auto v = kv::decode_kvc(file);
  EXPECT_TRUE(v.is_ok()) << v.status().to_string();
  if (!v.is_ok()) return file;
  kv::KvcHeader h = v->header;
  std::vector<uint8_t> payload(v->payload.begin(), v->payload.end());
  change(h, payload);
  return kv::encode_kvc(h, v->text, payload, v->tool_map);
}

class DiskCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = Tokenizer::open(DS4_SERVER_MODEL);
    ASSERT_TRUE(t.is_ok()) << t.status().to_string();
    tok_ = std::make_unique<Tokenizer>(std::move(*t));
    policy_ = {.min_tokens = 32,
               .cold_max_tokens = 30000,
               .continued_interval = 0,
               .boundary_trim = 4,
               .boundary_align = 16};
  }
  // A disk cache on dir_ and a scheduler using it (destroy the scheduler first); `drafts` > 0:
  // with the MTP file, drafting that many per step.
  void start(int drafts = 0) {
    DiskCacheOptions o{.dir = dir_.file("kv"),
                       .query = {.min_tokens = 32, .n_ctx = kCtx, .quant_bits = 2},
                       .max_pending = 256,  // every save of these tests is written
                       .log = [this](const std::string& l) {
                         std::lock_guard lock(logs_mu_);  // the writer and the scheduler log
                         logs_.push_back(l);
                       }};
    auto d = DiskCache::open(std::move(o), &replay_, *tok_);
    ASSERT_TRUE(d.is_ok()) << d.status().to_string();
    disk_ = std::move(*d);
    EngineOptions eo{.model_path = DS4_SERVER_MODEL, .threads = 2};
    if (drafts > 0) eo.mtp_path = DS4_SERVER_MTP;
    auto e = Engine::open(eo);
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    ASSERT_EQ((*e)->info().expert_bits, 2);
    auto s = Scheduler::start(std::move(*e), *tok_,
                              {.n_ctx = kCtx,
                               .prefill_chunk = 16,
                               .cache = policy_,
                               .drafting = {.drafts = drafts, .margin = 0.0f, .source = {}}},
                              &replay_, disk_.get());
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    sched_ = std::move(*s);
  }
  void stop() {
    sched_.reset();  // saves the live session (shutdown)
    disk_.reset();   // writes what is queued
  }
  // `msgs` rendered in thinking mode `think`, tokenized, seed 3.
  Request rendered(const std::vector<chat::Message>& msgs, chat::ThinkMode think, int max_tokens) {
    auto text = chat::render(msgs, {.think = think, .context_size = kCtx});
    EXPECT_TRUE(text.is_ok());
    Request r;
    r.rendered = *text;
    r.prompt = tok_->encode(r.rendered, SpecialTokens::kRecognize);
    r.sampling.seed = 3;
    r.max_tokens = max_tokens;
    return r;
  }
  Request chat(const std::string& system, const std::string& user, int max_tokens) {
    return rendered({{.role = chat::Role::kSystem, .content = system},
                     {.role = chat::Role::kUser, .content = user}},
                    chat::ThinkMode::kNone, max_tokens);
  }
  // A thinking-mode chat render of `msgs` (its generation prompt ends with "<think>").
  Request thinking_chat(const std::vector<chat::Message>& msgs, Protocol protocol) {
    Request r = rendered(msgs, chat::ThinkMode::kHigh, 40);
    r.output.thinking = true;
    r.protocol = protocol;
    return r;
  }
  bool logged(const std::string& needle) {
    std::lock_guard lock(logs_mu_);
    return std::any_of(logs_.begin(), logs_.end(),
                       [&](const std::string& l) { return l.find(needle) != std::string::npos; });
  }
  Event run(Request r, std::string* text) {
    auto t = sched_->submit(std::move(r));
    EXPECT_TRUE(t.is_ok()) << t.status().to_string();
    for (;;) {
      auto e = (*t)->next(kWait);
      if (!e) return Event{.finish = FinishReason::kError, .error = Status::internal("timed out")};
      if (e->kind == EventKind::kDone) return *e;
      if (e->kind == EventKind::kText) *text += e->text;
    }
  }

  const std::string system_ =
      "You answer questions about the weather in Paris, briefly and politely, and you cite the "
      "station you used for every number you give. Keep to the facts the stations report, say when "
      "a number is an estimate, and never answer about another city than Paris.";
  TempDir dir_;
  std::mutex logs_mu_;
  std::vector<std::string> logs_;
  ReplayMap replay_{64};
  CachePolicyOptions policy_;
  std::unique_ptr<Tokenizer> tok_;
  void continued_saves(int drafts);
  std::unique_ptr<DiskCache> disk_;
  std::unique_ptr<Scheduler> sched_;
};

TEST_F(DiskCacheTest, ColdAndShutdownSavesThenARestartLoadsTheColdFile) {
  start();
  Request r = chat(system_, "Rain today?", 6);
  const size_t boundary =
      cold_boundary(r.prompt, tok_->special_ids().user, tok_->special_ids().assistant, policy_);
  ASSERT_GE(boundary, 32u);
  ASSERT_LT(boundary, r.prompt.size());
  std::string cold_text;
  const Event d1 = run(r, &cold_text);
  ASSERT_TRUE(d1.error.is_ok()) << d1.error.to_string();
  EXPECT_EQ(d1.usage.cached_tokens, 0);
  stop();
  auto fs = files(dir_.file("kv"));
  ASSERT_EQ(fs.size(), 2u);
  std::sort(fs.begin(), fs.end(),
            [](const File& a, const File& b) { return a.header.tokens < b.header.tokens; });
  EXPECT_EQ(fs[0].header.reason, kv::SaveReason::kCold);
  EXPECT_EQ(fs[0].header.tokens, boundary);
  EXPECT_EQ(fs[0].name, kv::sha1_hex(tok_->decode(std::span(r.prompt).first(boundary))) + ".kv");
  EXPECT_EQ(fs[1].header.reason, kv::SaveReason::kShutdown);
  // The prompt and every sampled token but the last (which was never evaluated).
  EXPECT_EQ(fs[1].header.tokens, r.prompt.size() + d1.usage.completion_tokens - 1);
  EXPECT_EQ(fs[1].header.n_ctx, static_cast<uint32_t>(kCtx));

  start();
  std::string warm_text;
  const Event d2 = run(r, &warm_text);
  ASSERT_TRUE(d2.error.is_ok()) << d2.error.to_string();
  EXPECT_EQ(d2.usage.cached_tokens, static_cast<int>(boundary));
  EXPECT_EQ(d2.usage.prompt_tokens, d1.usage.prompt_tokens);
  EXPECT_EQ(warm_text, cold_text);  // the loaded state is the one the cold run computed
  EXPECT_EQ(disk_->stats().hits, 1);
  stop();
  EXPECT_EQ(files(dir_.file("kv")).size(), 2u);
}

// MTP drafting (issue 51) across a restore: the loaded session's draft window starts again after
// the loaded tokens (tiny's n_swa - 1 = 15 positions later drafting resumes), and greedy text is
// the text of the cold run, which drafted from the start.
TEST_F(DiskCacheTest, DraftingAcrossARestoreKeepsTheGreedyText) {
  start(/*drafts=*/2);
  Request r = chat(system_, "Rain today?", 40);
  r.sampling.temperature = 0.0f;
  std::string cold_text;
  const Event d1 = run(r, &cold_text);
  ASSERT_TRUE(d1.error.is_ok()) << d1.error.to_string();
  EXPECT_GT(d1.usage.draft_steps, 0);
  stop();
  start(/*drafts=*/2);
  std::string warm_text;
  const Event d2 = run(r, &warm_text);
  ASSERT_TRUE(d2.error.is_ok()) << d2.error.to_string();
  EXPECT_GT(d2.usage.cached_tokens, 0) << "a file was loaded";
  EXPECT_EQ(warm_text, cold_text);
  EXPECT_EQ(d2.text, d1.text);
  EXPECT_GT(d2.usage.draft_steps, 0) << "drafting resumed after the loaded tokens";
  stop();
}

// With MTP drafting too (issue 51): a verified run stops at a save point (and a step whose token
// was taken in the step before, a refused draft's replacement, saves there too); without both,
// the save at 112 is missed.
TEST_F(DiskCacheTest, ContinuedSavesLandOnMultiplesOfTheStep) {
  for (const int drafts : {0, 2}) {
    SCOPED_TRACE(drafts);
    std::filesystem::remove_all(dir_.file("kv"));
    continued_saves(drafts);
  }
}

void DiskCacheTest::continued_saves(int drafts) {
  policy_.cold_max_tokens = 0;  // only continued saves
  // Rounded up to the alignment: 16, so the 16 verifications before drafting turns itself off
  // (every draft refused) cross a save point.
  policy_.continued_interval = 10;
  start(drafts);
  Request r = chat(system_ + " " + system_, "Wind?", 40);
  r.sampling.temperature = 0.0f;
  const size_t n = r.prompt.size();
  std::string text;
  const Event d = run(std::move(r), &text);
  ASSERT_TRUE(d.error.is_ok());
  if (drafts > 0) {
    ASSERT_GT(d.usage.draft_steps, 0);
    ASSERT_EQ(d.usage.accepted_draft_tokens, 0) << "random weights: every draft refused";
  }
  const size_t live = n + d.usage.completion_tokens - 1;
  stop();
  std::vector<uint32_t> continued;
  bool shutdown = false;
  for (const File& f : files(dir_.file("kv"))) {
    if (f.header.reason == kv::SaveReason::kContinued) continued.push_back(f.header.tokens);
    if (f.header.reason == kv::SaveReason::kShutdown) shutdown = f.header.tokens == live;
  }
  std::sort(continued.begin(), continued.end());
  std::vector<uint32_t> want;
  for (uint32_t f = 32; f <= live; f += 16) want.push_back(f);  // from min_tokens on
  if (!want.empty() && want.back() == live) shutdown = true;    // the frontier file is the last one
  EXPECT_EQ(continued, want);
  EXPECT_TRUE(shutdown);
}

TEST_F(DiskCacheTest, APayloadThatDoesNotLoadIsRemovedAndTheRequestRunsFromScratch) {
  start();
  Request r = chat(system_, "Snow?", 5);
  std::string cold_text;
  ASSERT_TRUE(run(r, &cold_text).error.is_ok());
  stop();
  // Corrupt the cold file's payload: its layer count (DSV4 field 8) no longer fits the model.
  const std::optional<File> cold = cold_file(dir_.file("kv"));
  ASSERT_TRUE(cold.has_value());
  const std::string path = dir_.file("kv/" + cold->name);
  const std::vector<uint8_t> bytes =
      reencoded(gguf::testing::read_bytes(path),
                [](kv::KvcHeader&, std::vector<uint8_t>& payload) { payload[32] += 1; });
  write_file(path, bytes);

  start();
  std::string text;
  const Event d = run(r, &text);
  ASSERT_TRUE(d.error.is_ok()) << d.error.to_string();
  EXPECT_EQ(d.usage.cached_tokens, 0);
  EXPECT_EQ(text, cold_text);
  stop();  // the writer is done: logs_ is ours
  EXPECT_TRUE(std::any_of(logs_.begin(), logs_.end(), [](const std::string& l) {
    return l.find("its payload does not load") != std::string::npos;
  }));
  // The cold save of this run wrote a sound file under the same name again.
  const auto again = gguf::testing::read_bytes(path);
  EXPECT_NE(again, bytes);
}

// issue 47 item 3: each damaged file is refused with its reason, removed with one log line naming
// it, and not counted as cached (no hit, cached tokens 0); the request is answered as a miss with
// the cold run's output, and its cold save, a sound file again, serves the next one. The re-encoded
// file with another token count has sound checksums: the scheduler refuses it, and before the fix
// the session kept the tokens it had loaded and reported them as cached.
TEST_F(DiskCacheTest, ADamagedFileIsRemovedAndTheRequestIsAMiss) {
  start();
  Request r = chat(system_, "Snow?", 5);
  std::string cold_text;
  ASSERT_TRUE(run(r, &cold_text).error.is_ok());
  stop();
  const std::optional<File> cold = cold_file(dir_.file("kv"));
  ASSERT_TRUE(cold.has_value());
  const std::string path = dir_.file("kv/" + cold->name);
  const std::vector<uint8_t> sound = gguf::testing::read_bytes(path);
  const size_t payload_at = kv::kvc_payload_offset(
      static_cast<uint32_t>(tok_->decode(std::span(r.prompt).first(cold->header.tokens)).size()));
  // The first logit: after the payload's 13 header fields and its token ids.
  const size_t logit_at = payload_at + 4 * (13 + cold->header.tokens);
  using Bytes = std::vector<uint8_t>;
  const struct {
    const char* what;
    std::function<Bytes(Bytes)> damage;
    const char* reason;
  } cases[] = {
      {"a flipped payload byte",
       [&](Bytes f) {
         f[logit_at + 4000] ^= 0x40;
         return f;
       },
       "checksum mismatch"},
      {"a NaN in the payload",
       [&](Bytes f) {
         const float nan = std::nanf("");
         std::memcpy(f.data() + logit_at, &nan, 4);
         return f;
       },
       "checksum mismatch"},
      {"another header token count",
       [](Bytes f) {
         f[8] += 1;
         return f;
       },
       "checksum mismatch"},
      {"another header token count, re-encoded",
       [](Bytes f) { return reencoded(f, [](kv::KvcHeader& h, Bytes&) { h.tokens += 1; }); },
       "its header says"},
      {"a truncated file",
       [](Bytes f) {
         f.resize(f.size() - 1000);
         return f;
       },
       "cut short"},
      {"a version-1 file",
       [](Bytes f) {
         f.resize(f.size() - kv::kKvcFooterBytes);
         f[3] = 1;
         return f;
       },
       "KVC version 1"},
  };
  for (const auto& c : cases) {
    write_file(path, c.damage(sound));
    logs_.clear();
    start();
    std::string text;
    const Event d = run(r, &text);
    ASSERT_TRUE(d.error.is_ok()) << c.what << ": " << d.error.to_string();
    EXPECT_EQ(d.usage.cached_tokens, 0) << c.what;
    EXPECT_EQ(text, cold_text) << c.what;
    EXPECT_EQ(disk_->stats().hits, 0) << c.what;
    // The run's cold save, once written, serves the same request again from disk (the live
    // session holds the answer too, so its tokens are no prefix of the prompt).
    disk_->flush();
    std::string again;
    const Event d2 = run(r, &again);
    EXPECT_EQ(d2.usage.cached_tokens, static_cast<int>(cold->header.tokens)) << c.what;
    EXPECT_EQ(again, cold_text) << c.what;
    stop();
    const std::string removing = "kv cache: removing " + cold->name + ": ";
    EXPECT_EQ(std::count_if(logs_.begin(), logs_.end(),
                            [&](const std::string& l) { return l.rfind(removing, 0) == 0; }),
              1)
        << c.what;
    const auto line = std::find_if(logs_.begin(), logs_.end(),
                                   [&](const std::string& l) { return l.rfind(removing, 0) == 0; });
    ASSERT_NE(line, logs_.end()) << c.what;
    EXPECT_NE(line->find(c.reason), std::string::npos) << *line;
    EXPECT_TRUE(kv::decode_kvc(gguf::testing::read_bytes(path)).is_ok()) << c.what;
  }
}

// §3.1, §3.3, §2.7: a tool-less chat turn that reasoned leaves its visible transcript (the prompt
// without "<think>", then "</think>" and the answer: what the client sends back) as the key of the
// session's evict save, with header bit 2. The next chat request of that conversation loads it
// (the live tokens, reasoning included, and only the suffix tokenized); a Responses request with
// the same text does not (bit 2 files serve chat and messages only) and gets the token-text file.
TEST_F(DiskCacheTest, AThinkingTurnIsSavedUnderItsVisibleTranscriptAndServesOnlyChat) {
  start();
  const std::string answer = "Yes, light rain.";
  std::vector<chat::Message> msgs{{.role = chat::Role::kSystem, .content = system_},
                                  {.role = chat::Role::kUser, .content = "Rain today?"}};
  Request r1 = thinking_chat(msgs, Protocol::kChat);
  r1.output.forced =
      tok_->encode("I look at the station.</think>" + answer, SpecialTokens::kRecognize);
  r1.output.forced.push_back(tok_->special_ids().eos);
  const std::string visible =
      r1.rendered.substr(0, r1.rendered.size() - chat::kThinkStart.size()) + "</think>" + answer;
  const size_t cold =
      cold_boundary(r1.prompt, tok_->special_ids().user, tok_->special_ids().assistant, policy_);
  std::string text;
  const Event d1 = run(r1, &text);
  ASSERT_TRUE(d1.error.is_ok()) << d1.error.to_string();
  ASSERT_EQ(d1.finish, FinishReason::kStop);
  const size_t frontier =
      r1.prompt.size() + r1.output.forced.size() - 1;  // the EOS is not evaluated
  // Another conversation replaces the session: the evict save.
  text.clear();
  ASSERT_TRUE(run(chat("You translate into French.", "Good morning", 3), &text).error.is_ok());
  disk_->flush();
  const auto all = files(dir_.file("kv"));
  const auto evict = std::find_if(all.begin(), all.end(), [](const File& f) {
    return f.header.reason == kv::SaveReason::kEvict;
  });
  ASSERT_NE(evict, all.end());
  EXPECT_EQ(evict->name, kv::sha1_hex(visible) + ".kv");
  EXPECT_EQ(evict->header.flags & (kv::kKvcThinkingTextFlag | kv::kKvcResponsesTextFlag),
            kv::kKvcThinkingTextFlag);
  EXPECT_EQ(evict->header.tokens, frontier);
  // The client's next request: the answer without its reasoning, and a new question.
  msgs.push_back({.role = chat::Role::kAssistant, .content = answer});
  msgs.push_back({.role = chat::Role::kUser, .content = "And tomorrow?"});
  Request as_responses = thinking_chat(msgs, Protocol::kResponses);
  ASSERT_TRUE(as_responses.rendered.starts_with(visible));  // the template agrees with the key
  text.clear();
  const Event d2 = run(as_responses, &text);
  ASSERT_TRUE(d2.error.is_ok()) << d2.error.to_string();
  EXPECT_EQ(d2.usage.cached_tokens, static_cast<int>(cold));  // the token-text cold file
  text.clear();
  const Event d3 = run(thinking_chat(msgs, Protocol::kChat), &text);
  ASSERT_TRUE(d3.error.is_ok()) << d3.error.to_string();
  EXPECT_EQ(d3.usage.cached_tokens, static_cast<int>(frontier));
  EXPECT_TRUE(logged("key=thinking-visible"));
  stop();
}

// §3.5 step 7: after a load the file's hits and last use are rewritten, or the file is deleted
// when the live session owns it (consumed: more tokens than the cold window) -- by the writer
// thread, in queue order, so the scheduler thread does no file I/O for it; flush() waits for it.
TEST_F(DiskCacheTest, AHitsBookkeepingIsDoneByTheWriter) {
  start();
  Request r = chat(system_, "Fog?", 4);
  std::string text;
  ASSERT_TRUE(run(r, &text).error.is_ok());
  stop();
  const auto cold_of = [&]() -> std::optional<File> {
    for (const File& f : files(dir_.file("kv"))) {
      if (f.header.reason == kv::SaveReason::kCold) return f;
    }
    return std::nullopt;
  };
  ASSERT_TRUE(cold_of().has_value());
  EXPECT_EQ(cold_of()->header.hits, 0u);
  start();
  text.clear();
  ASSERT_GT(run(r, &text).usage.cached_tokens, 0);
  disk_->flush();
  ASSERT_TRUE(cold_of().has_value());
  EXPECT_EQ(cold_of()->header.hits, 1u);
  EXPECT_GE(cold_of()->header.last_used, cold_of()->header.created);
  stop();
  // A cold window smaller than the file: the load consumes it.
  policy_.cold_max_tokens = 32;
  const uint32_t tokens = cold_of()->header.tokens;
  ASSERT_GT(tokens, 32u);
  start();
  text.clear();
  EXPECT_EQ(run(r, &text).usage.cached_tokens, static_cast<int>(tokens));
  disk_->flush();
  EXPECT_FALSE(cold_of().has_value());
  EXPECT_TRUE(logged(" consumed file="));
  stop();
}

// The writer keeps the payload buffer of the checkpoint it wrote, and the next checkpoint's
// payload goes into it (a 400 MB session's save then pays no page faults or zero fill; issue 55
// item 4): same memory while it can hold the bytes, a new buffer when it cannot. Every file holds
// the bytes its checkpoint was given.
TEST_F(DiskCacheTest, TheWritersPayloadBufferServesTheNextCheckpoint) {
  DiskCacheOptions o{.dir = dir_.file("kv"), .query = {.min_tokens = 32, .n_ctx = kCtx}};
  auto d = DiskCache::open(std::move(o), &replay_, *tok_);
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  DiskCache& disk = **d;
  const std::vector<TokenId> ids = tok_->encode(system_, SpecialTokens::kRecognize);
  ASSERT_GE(ids.size(), 40u);
  auto checkpoint = [&](size_t bytes, uint8_t fill, size_t n_ids) {
    base::ByteBuffer b = disk.payload_buffer(bytes);
    EXPECT_EQ(b.size(), bytes);
    std::fill(b.data(), b.data() + b.size(), fill);
    const uint8_t* at = b.data();
    EXPECT_TRUE(
        disk.save(SaveJob{.reason = kv::SaveReason::kCold,
                          .tokens = static_cast<uint32_t>(n_ids),
                          .token_ids = std::vector<TokenId>(ids.begin(), ids.begin() + n_ids),
                          .payload = std::move(b)}));
    disk.flush();
    return at;
  };
  const size_t big = 3 * base::ByteBuffer::kHugeBytes;
  const uint8_t* first = checkpoint(big, 0x11, 34);
  EXPECT_EQ(checkpoint(big - 1000, 0x22, 35), first) << "the written buffer is reused";
  EXPECT_EQ(checkpoint(big, 0x33, 36), first) << "its capacity, not its last size, counts";
  const uint8_t* larger = checkpoint(2 * big, 0x44, 37);
  EXPECT_EQ(checkpoint(100, 0x55, 38), larger) << "the larger buffer is the one kept";
  // Each file holds its own checkpoint's bytes.
  std::vector<std::pair<size_t, uint8_t>> got;
  for (const File& f : files(dir_.file("kv"))) {
    const auto bytes = gguf::testing::read_bytes(dir_.file("kv") + "/" + f.name);
    auto v = kv::decode_kvc(bytes);
    ASSERT_TRUE(v.is_ok()) << v.status().to_string();
    ASSERT_FALSE(v->payload.empty());
    EXPECT_TRUE(std::all_of(v->payload.begin(), v->payload.end(),
                            [&](uint8_t b) { return b == v->payload[0]; }));
    got.emplace_back(v->payload.size(), v->payload[0]);
  }
  std::sort(got.begin(), got.end());
  const std::vector<std::pair<size_t, uint8_t>> want{
      {100, 0x55}, {big - 1000, 0x22}, {big, 0x11}, {big, 0x33}, {2 * big, 0x44}};
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace ds4::serve
