// Distributed inference (features.md §10, issue 49) on the CPU over real loopback TCP: a
// coordinator (dist::Coordinator as the LayerTail of an engine holding layer 0) and slice workers
// (dist::SliceWorker, each on its own thread with its own engine) that register with it, the
// spans passed from worker to worker and the last answering the coordinator. Through the plain
// Session API this gives the whole model's logits bit for bit with f32 hidden states -- a
// pipelined chunked prefill, token-by-token decoding, a second session, a sync to another prefix
// -- and, with f16 hidden states (Hugging Face numerics), logits within kF16HiddenRelL2 of them.
// A worker restarted mid-session registers again and the session is replayed to it; a worker lost
// for good fails the request in flight with a clear error, later requests wait for a full route up
// to a timeout and fail naming the missing layer; a worker of another build or model is refused
// at registration with a message naming the difference.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <thread>
#include <zmq.hpp>

#include "dist/build_id.h"
#include "dist/coordinator.h"
#include "dist/route.h"
#include "dist/slice_worker.h"
#include "gguf/test_util.h"
#include "model_test_util.h"

namespace ds4::test {
namespace {

using dist::Coordinator;
using dist::HiddenBits;
using dist::SliceWorker;
using std::chrono::milliseconds;

constexpr char kModel[] = "tiny-f32";
constexpr int kCtx = 256;
constexpr int kChunk = 16;
constexpr int kPromptTokens = 40;  // three prefill chunks: two in flight behind the first
constexpr int kDecodeTokens = 4;
// Liveness in these tests: beats every 50 ms, a peer silent for 1 s is gone (the products use
// 500 ms and 5 s); long enough for a loaded 2-core CI machine not to drop a working worker.
constexpr milliseconds kBeat{50};
constexpr milliseconds kBeatTimeout{1000};
// The test workers' limit on a message (the tiny model's spans and shards are a few MiB).
constexpr uint64_t kMaxBody = 16 << 20;
// f16 hidden states round each value to 11 significant bits (relative error at most 2^-12): with
// the FP8 / FP4 simulations off the logits move by about as much (2.2e-4 measured on tiny-f32 for
// this prompt), so 2e-3 leaves a tenfold margin, while a wrong layer or a lost token moves them by
// order 1. With the simulations on (the canonical numerics) one rounding can flip a code and this
// random model's logits moved by 0.46: f16 on the wire is an option, f32 the default.
constexpr double kF16HiddenRelL2 = 2e-3;

// hf_mode: the FP8 / FP4 simulations off (model_test_util.h), so that the function is continuous
// and a rounding of the hidden state moves the logits by about as much, not by a flipped code.
EngineOptions slice_options(int first, int last, bool output, bool hf_mode,
                            const char* model = kModel) {
  EngineOptions o;
  o.model_path = model_path(model);
  o.qat_simulation = !hf_mode;
  o.f16_kv_rows = !hf_mode;
  o.layers = {.first = first, .last = last, .output = output};
  return o;
}

std::unique_ptr<Engine> open_engine(const EngineOptions& o) {
  auto e = Engine::open(o);
  EXPECT_TRUE(e.is_ok()) << e.status().message();
  return e.is_ok() ? std::move(e).value() : nullptr;
}

// A worker serving on its own thread until destroyed.
class WorkerThread {
 public:
  WorkerThread(int first, int last, bool output, const std::string& coordinator,
               bool hf_mode = false, std::string build = std::string(dist::build_id()),
               std::shared_ptr<const dist::ClusterKey> key = nullptr, const char* model = kModel)
      : engine_(open_engine(slice_options(first, last, output, hf_mode, model))) {
    auto w = SliceWorker::open(*engine_, {.coordinator = coordinator,
                                          .key = std::move(key),
                                          .build = std::move(build),
                                          .n_ctx = kCtx,
                                          .prefill_chunk = kChunk,
                                          .beat_interval = kBeat,
                                          .beat_timeout = kBeatTimeout,
                                          .limits = {.max_body_bytes = kMaxBody}});
    EXPECT_TRUE(w.is_ok()) << w.status().message();
    worker_ = std::move(w).value();
    thread_ = std::thread([this] { served_ = worker_->serve(); });
  }
  ~WorkerThread() { (void)stop(); }
  Status stop() {
    worker_->stop();
    return join();
  }
  const std::string& endpoint() const { return worker_->endpoint(); }
  // Waits for serve() to return by itself (a refused registration).
  Status join() {
    if (thread_.joinable()) thread_.join();
    return served_;
  }
  // Waits until the coordinator accepted the registration (or the worker stopped).
  bool wait_registered(milliseconds at_most = milliseconds(4000)) const {
    for (int i = 0; i < at_most.count() / 10 && !worker_->registered(); ++i) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    return worker_->registered();
  }

 private:
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<SliceWorker> worker_;
  std::thread thread_;
  Status served_ = Status::ok();
};

bool same(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class DistTest : public ::testing::Test {
 protected:
  void SetUp() override {
    whole_ = open_model(kModel, false);
    ASSERT_NE(whole_, nullptr);
    n_layer_ = whole_->info().n_layer;
    ASSERT_GE(n_layer_, 3);
  }
  // A coordinator holding layer 0 and an engine whose sessions run through it.
  void start_coordinator(HiddenBits bits = HiddenBits::kF32, bool hf_mode = false, int window = 0,
                         milliseconds route_timeout = milliseconds(20000)) {
    EngineOptions o = slice_options(0, 0, false, hf_mode);
    auto c = Coordinator::open({.key = key_,
                                .bits = bits,
                                .window = window,
                                .beat_interval = kBeat,
                                .beat_timeout = kBeatTimeout,
                                .work_timeout = milliseconds(30000),
                                .route_timeout = route_timeout,
                                .log = [this](const std::string& s) {
                                  std::lock_guard lock(log_mu_);
                                  log_ += s + "\n";
                                }});
    ASSERT_TRUE(c.is_ok()) << c.status().message();
    coordinator_ = std::move(c).value();
    o.tail = coordinator_;
    engine_ = open_engine(o);
    ASSERT_NE(engine_, nullptr);
    ASSERT_TRUE(
        coordinator_->start(dist::hello_of(engine_->info(), dist::build_id(), kCtx)).is_ok());
  }
  std::unique_ptr<Session> session(Engine& e) {
    auto s = e.create_session({.n_ctx = kCtx, .prefill_chunk = kChunk});
    EXPECT_TRUE(s.is_ok());
    return std::move(s).value();
  }
  // A prompt's logits and a few greedy steps, in `s` and in the whole model, bit for bit.
  void expect_whole_model(Session& s, const std::vector<TokenId>& prompt) {
    auto ref = session(*whole_);
    ASSERT_TRUE(ref->append(prompt).is_ok());
    auto st = s.sync(prompt);
    ASSERT_TRUE(st.is_ok()) << st.status().message() << "\n" << log();
    EXPECT_TRUE(same(s.logits(), ref->logits())) << "rel L2 " << rel_l2(s.logits(), ref->logits());
    for (int i = 0; i < kDecodeTokens; ++i) {
      const TokenId next = argmax_of(ref->logits());
      ASSERT_TRUE(ref->eval(next).is_ok());
      const Status e = s.eval(next);
      ASSERT_TRUE(e.is_ok()) << e.message();
      EXPECT_TRUE(same(s.logits(), ref->logits())) << "step " << i;
    }
  }

  std::unique_ptr<Engine> whole_, engine_;
  std::shared_ptr<Coordinator> coordinator_;
  std::shared_ptr<const dist::ClusterKey> key_;  // start_coordinator's cluster key, if any
  int n_layer_ = 0;
  // The coordinator's log lines (written by its control thread).
  std::string log() const {
    std::lock_guard lock(log_mu_);
    return log_;
  }
  mutable std::mutex log_mu_;
  std::string log_;
};

TEST_F(DistTest, TwoWorkersEqualTheWholeModel) {
  start_coordinator();
  WorkerThread w1(1, 1, false, coordinator_->endpoint()),
      w2(2, n_layer_ - 1, true, coordinator_->endpoint());
  ASSERT_TRUE(coordinator_->wait_for_route(milliseconds(10000)).is_ok()) << log();
  EXPECT_NE(coordinator_->describe_route().find("1:1@tcp://127.0.0.1:"), std::string::npos)
      << coordinator_->describe_route();
  EXPECT_EQ(coordinator_->window(), 4);  // two hops + 2
  auto s = session(*engine_);
  auto other = session(*engine_);  // a second timeline on the same workers
  std::vector<TokenId> prompt = test_prompt(kPromptTokens, 21);
  expect_whole_model(*s, prompt);
  ASSERT_TRUE(other->append(test_prompt(8, 22)).is_ok());
  // A prefix that is not a continuation: the local slice and the workers start again (reset).
  prompt.resize(20);
  prompt.push_back(77);
  auto fresh = session(*whole_);
  ASSERT_TRUE(fresh->append(prompt).is_ok());
  ASSERT_TRUE(s->sync(prompt).is_ok());
  EXPECT_TRUE(same(s->logits(), fresh->logits())) << rel_l2(s->logits(), fresh->logits());
}

// Snapshots (features.md §10.9): a distributed session's save gathers the workers' layers into one
// DSV4 payload, the same bytes as the whole model's; a payload loads into a route of another split
// (and into one process) and decoding goes on exactly.
TEST_F(DistTest, SnapshotsGatherIntoOnePayloadAndSplitOverAnotherRoute) {
  start_coordinator();
  auto w1 = std::make_unique<WorkerThread>(1, 1, false, coordinator_->endpoint());
  auto w2 = std::make_unique<WorkerThread>(2, n_layer_ - 1, true, coordinator_->endpoint());
  auto s = session(*engine_);
  auto ref = session(*whole_);
  const std::vector<TokenId> prompt = test_prompt(kPromptTokens, 41);
  ASSERT_TRUE(ref->append(prompt).is_ok());
  ASSERT_TRUE(s->append(prompt).is_ok());
  auto saved = s->save();
  ASSERT_TRUE(saved.is_ok()) << saved.status().message() << "\n" << log();
  auto want = ref->save();
  ASSERT_TRUE(want.is_ok());
  EXPECT_EQ(*saved, *want) << "one normal payload, the whole model's bytes";

  // Another split: the coordinator holds layers 0..1, one worker the rest.
  s.reset();  // a session goes before its engine
  w1.reset();
  w2.reset();
  engine_.reset();
  coordinator_.reset();
  EngineOptions o = slice_options(0, 1, false, false);
  auto c = Coordinator::open({.beat_interval = kBeat, .beat_timeout = kBeatTimeout});
  ASSERT_TRUE(c.is_ok());
  o.tail = *c;
  auto engine = open_engine(o);
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE((*c)->start(dist::hello_of(engine->info(), dist::build_id(), kCtx)).is_ok());
  WorkerThread w(2, n_layer_ - 1, true, (*c)->endpoint());
  auto loaded = session(*engine);
  const Status st = loaded->load(*saved);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_TRUE(same(loaded->logits(), ref->logits()));
  auto whole_loaded = session(*whole_);
  ASSERT_TRUE(whole_loaded->load(*saved).is_ok());
  for (int i = 0; i < kDecodeTokens; ++i) {
    const TokenId next = argmax_of(ref->logits());
    ASSERT_TRUE(ref->eval(next).is_ok());
    ASSERT_TRUE(loaded->eval(next).is_ok());
    ASSERT_TRUE(whole_loaded->eval(next).is_ok());
    EXPECT_TRUE(same(loaded->logits(), ref->logits())) << "step " << i;
    EXPECT_TRUE(same(whole_loaded->logits(), ref->logits())) << "step " << i;
  }
  // Saved again on this split: still the whole model's bytes.
  auto again = loaded->save();
  auto want2 = ref->save();
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  EXPECT_EQ(*again, *want2);
}

// Engine::step (the server's batches) over the route: each entry through the slice and the tail,
// the same logits as each session alone in the whole model.
TEST_F(DistTest, BatchedStepsEqualEachSessionAlone) {
  start_coordinator();
  WorkerThread w(1, n_layer_ - 1, true, coordinator_->endpoint());
  auto a = session(*engine_), b = session(*engine_);
  auto ra = session(*whole_), rb = session(*whole_);
  const std::vector<TokenId> pa = test_prompt(kPromptTokens, 31), pb = test_prompt(9, 32);
  ASSERT_TRUE(ra->append(pa).is_ok());
  ASSERT_TRUE(rb->append(pb).is_ok());
  std::vector<StepEntry> entries = {{.session = a.get(), .tokens = pa},
                                    {.session = b.get(), .tokens = pb}};
  ASSERT_TRUE(engine_->step(entries).is_ok());
  ASSERT_TRUE(entries[0].status.is_ok()) << entries[0].status.message();
  ASSERT_TRUE(entries[1].status.is_ok()) << entries[1].status.message();
  for (int i = 0; i < kDecodeTokens; ++i) {
    EXPECT_TRUE(same(a->logits(), ra->logits())) << "step " << i;
    EXPECT_TRUE(same(b->logits(), rb->logits())) << "step " << i;
    const TokenId ta = argmax_of(ra->logits()), tb = argmax_of(rb->logits());
    ASSERT_TRUE(ra->eval(ta).is_ok());
    ASSERT_TRUE(rb->eval(tb).is_ok());
    entries = {{.session = a.get(), .tokens = std::span(&ta, 1)},
               {.session = b.get(), .tokens = std::span(&tb, 1)}};
    ASSERT_TRUE(engine_->step(entries).is_ok());
    ASSERT_TRUE(entries[0].status.is_ok() && entries[1].status.is_ok());
  }
}

TEST_F(DistTest, OneSpanAtATimeGivesTheSameLogits) {
  start_coordinator(HiddenBits::kF32, false, /*window=*/1);
  WorkerThread w(1, n_layer_ - 1, true, coordinator_->endpoint());
  auto s = session(*engine_);
  expect_whole_model(*s, test_prompt(kPromptTokens, 23));
}

TEST_F(DistTest, F16HiddenStatesStayWithinTheirTolerance) {
  auto whole = open_model(kModel, /*hf_mode=*/true);
  ASSERT_NE(whole, nullptr);
  start_coordinator(HiddenBits::kF16, /*hf_mode=*/true);
  WorkerThread w(1, n_layer_ - 1, true, coordinator_->endpoint(), /*hf_mode=*/true);
  auto s = session(*engine_);
  auto ref = session(*whole);
  const std::vector<TokenId> prompt = test_prompt(kPromptTokens, 12);
  ASSERT_TRUE(ref->append(prompt).is_ok());
  auto st = s->append(prompt);
  ASSERT_TRUE(st.is_ok()) << st.status().message();
  const double err = rel_l2(s->logits(), ref->logits());
  EXPECT_LT(err, kF16HiddenRelL2);
  EXPECT_GT(err, 0.0) << "f16 hidden states cannot be exact";
  EXPECT_EQ(argmax_of(s->logits()), argmax_of(ref->logits()));
}

TEST_F(DistTest, ARestartedWorkerIsReplayedTo) {
  start_coordinator();
  WorkerThread w1(1, 1, false, coordinator_->endpoint());
  auto w2 = std::make_unique<WorkerThread>(2, n_layer_ - 1, true, coordinator_->endpoint());
  auto s = session(*engine_);
  auto ref = session(*whole_);
  std::vector<TokenId> transcript = test_prompt(24, 13);
  ASSERT_TRUE(ref->append(transcript).is_ok());
  ASSERT_TRUE(s->append(transcript).is_ok());
  // The last worker restarts: nothing of the session is left there. Its new registration
  // replaces the old one (same layers, same host).
  w2.reset();
  w2 = std::make_unique<WorkerThread>(2, n_layer_ - 1, true, coordinator_->endpoint());
  ASSERT_TRUE(w2->wait_registered());
  const TokenId next = argmax_of(ref->logits());
  ASSERT_TRUE(ref->eval(next).is_ok());
  auto st = s->append(std::span<const TokenId>(&next, 1));
  ASSERT_TRUE(st.is_ok()) << st.status().message() << "\n" << log();
  EXPECT_EQ(st->reused, 0) << "the session is replayed from position 0";
  EXPECT_EQ(st->evaluated, static_cast<int>(transcript.size()) + 1);
  EXPECT_TRUE(same(s->logits(), ref->logits())) << "rel L2 " << rel_l2(s->logits(), ref->logits());
  EXPECT_NE(log().find("replaces"), std::string::npos) << log();
}

TEST_F(DistTest, ALostWorkerFailsClearlyAndLaterRequestsWaitForARoute) {
  start_coordinator(HiddenBits::kF32, false, 0, /*route_timeout=*/milliseconds(300));
  auto w = std::make_unique<WorkerThread>(1, n_layer_ - 1, true, coordinator_->endpoint());
  auto s = session(*engine_);
  ASSERT_TRUE(s->append(test_prompt(8, 14)).is_ok());
  // Gone for good: the coordinator notices the silence and drops it.
  w.reset();
  for (int i = 0; i < 300 && coordinator_->route_ready().is_ok(); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  const Status ready = coordinator_->route_ready();
  EXPECT_NE(ready.message().find("distributed route incomplete: missing layer 1"),
            std::string::npos)
      << ready.message();
  const auto start = std::chrono::steady_clock::now();
  const Status e = s->eval(5);
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.message().find("missing layer 1"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("waited 300 ms"), std::string::npos) << e.message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << "no hang";
  EXPECT_NE(log().find("lost: no beat"), std::string::npos) << log();
  // A worker comes back: the session is evaluated again from its start, and is the whole model.
  w = std::make_unique<WorkerThread>(1, n_layer_ - 1, true, coordinator_->endpoint());
  ASSERT_TRUE(w->wait_registered());
  expect_whole_model(*s, test_prompt(12, 15));
}

// A stranger on loopback sends the worker's data endpoint garbage, an item that does not chain,
// an item out of order and a frame over the size limit: each is refused (the coordinator hears the
// errors it can match to nothing), the oversized sender is dropped, and the worker serves the
// route's sessions on, exactly.
TEST_F(DistTest, MalformedAndOutOfOrderItemsChangeNothing) {
  start_coordinator();
  WorkerThread w(1, n_layer_ - 1, true, coordinator_->endpoint());
  auto s = session(*engine_);
  const std::vector<TokenId> prompt = test_prompt(kPromptTokens, 71);
  ASSERT_TRUE(s->append(prompt).is_ok());
  zmq::context_t ctx(1);
  zmq::socket_t stranger(ctx, zmq::socket_type::push);
  stranger.set(zmq::sockopt::linger, 0);
  stranger.connect(w.endpoint());
  const auto put = [&](const std::vector<uint8_t>& b) {
    ASSERT_TRUE(stranger.send(zmq::buffer(b), zmq::send_flags::none).has_value());
  };
  put({1, 2, 3, 4, 5});
  dist::Work bad;
  bad.session = 1;  // the engine's first session: the one above
  bad.request = 1u << 30;
  bad.tokens = {5, 6};
  bad.prefix_hash = 7;  // continues from a timeline the worker does not hold
  bad.result_hash = dist::extend_prefix_hash(7, bad.tokens);
  bad.pos0 = 3;
  bad.route = {{.endpoint = w.endpoint(),
                .layer_first = 1,
                .layer_last = static_cast<uint32_t>(n_layer_ - 1),
                .output = true}};
  bad.hidden_width = static_cast<uint32_t>(engine_->info().hidden_width);
  bad.hidden.assign(2 * bad.hidden_width, 0.5f);
  put(dist::encode(bad));
  std::vector<uint8_t> broken = dist::encode(bad);
  broken[40] ^= 0xff;  // a token changed: the hashes no longer chain
  put(broken);
  std::vector<uint8_t> huge(dist::kFrameHeaderBytes + kMaxBody + 1, 0);
  (void)stranger.send(zmq::buffer(huge), zmq::send_flags::dontwait);
  for (int i = 0; i < 100 && log().find("KV prefix hash mismatch") == std::string::npos; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_NE(log().find("KV prefix hash mismatch"), std::string::npos) << log();
  // The session goes on as if nothing happened.
  auto ref = session(*whole_);
  ASSERT_TRUE(ref->append(prompt).is_ok());
  for (int i = 0; i < kDecodeTokens; ++i) {
    const TokenId next = argmax_of(ref->logits());
    ASSERT_TRUE(ref->eval(next).is_ok());
    const Status e = s->eval(next);
    ASSERT_TRUE(e.is_ok()) << e.message();
    EXPECT_TRUE(same(s->logits(), ref->logits())) << "step " << i;
  }
}

TEST_F(DistTest, WorkersOfAnotherBuildOrModelAreRefused) {
  start_coordinator();
  WorkerThread other_build(1, n_layer_ - 1, true, coordinator_->endpoint(), false, "0123abcd");
  const Status st = other_build.join();
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("refused this worker"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("build 0123abcd (the coordinator's: "), std::string::npos)
      << st.message();
  // Another model file: its fingerprint differs.
  auto q2 = Engine::open({.model_path = model_path("tiny-q2"), .layers = {1, -1, true}});
  ASSERT_TRUE(q2.is_ok()) << q2.status().message();
  ASSERT_EQ((*q2)->info().n_layer, n_layer_);
  {
    auto w = SliceWorker::open(**q2, {.coordinator = coordinator_->endpoint(),
                                      .build = std::string(dist::build_id()),
                                      .n_ctx = kCtx,
                                      .beat_interval = kBeat});
    ASSERT_TRUE(w.is_ok());
    const Status refused = (*w)->serve();
    EXPECT_NE(refused.message().find("worker refused: model "), std::string::npos)
        << refused.message();
  }
  EXPECT_FALSE(coordinator_->route_ready().is_ok());
}

// CURVE (curve.h): with a cluster key only workers holding the same key join, and the route works
// as without one; an address beyond loopback is refused without a key.
TEST_F(DistTest, WithAClusterKeyOnlyKeyHoldersJoin) {
  gguf::testing::TempDir keys;  // removed when the test ends, whatever its outcome
  ASSERT_TRUE(dist::write_cluster_key(keys.file("a.key")).is_ok());
  ASSERT_TRUE(dist::write_cluster_key(keys.file("b.key")).is_ok());
  auto a = dist::load_cluster_key(keys.file("a.key"));
  auto b = dist::load_cluster_key(keys.file("b.key"));
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  key_ = std::make_shared<const dist::ClusterKey>(*a);
  start_coordinator();
  const std::string build(dist::build_id());
  WorkerThread stranger(1, n_layer_ - 1, true, coordinator_->endpoint(), false, build,
                        std::make_shared<const dist::ClusterKey>(*b));
  WorkerThread keyless(1, n_layer_ - 1, true, coordinator_->endpoint(), false, build);
  // Both had a second (twenty beat intervals) to register.
  EXPECT_FALSE(stranger.wait_registered(milliseconds(1000))) << "another cluster's key";
  EXPECT_FALSE(keyless.wait_registered(milliseconds(10))) << "no key";
  EXPECT_FALSE(coordinator_->route_ready().is_ok());
  WorkerThread member(1, n_layer_ - 1, true, coordinator_->endpoint(), false, build, key_);
  ASSERT_TRUE(member.wait_registered());
  auto s = session(*engine_);
  expect_whole_model(*s, test_prompt(kPromptTokens, 51));

  auto open = Coordinator::open({.listen = "tcp://0.0.0.0:0"});
  ASSERT_FALSE(open.is_ok());
  EXPECT_NE(open.status().message().find("beyond loopback needs a cluster key"), std::string::npos);
  auto engine = open_engine(slice_options(1, n_layer_ - 1, true, false));
  auto w = SliceWorker::open(
      *engine, {.coordinator = coordinator_->endpoint(), .listen = "tcp://0.0.0.0:0"});
  EXPECT_FALSE(w.is_ok());
}

// The small shape (its q2 file with decisive routing): a coordinator holding two layers and two
// workers, a pipelined prefill and decoding, equal the whole model bit for bit.
TEST(DistSmallTest, TwoWorkersEqualTheWholeModel) {
  constexpr char kSmall[] = "small-q2-decisive";
  auto whole = open_model(kSmall, false);
  ASSERT_NE(whole, nullptr);
  const int n_layer = whole->info().n_layer;
  ASSERT_GE(n_layer, 4);
  auto c = Coordinator::open({.beat_interval = kBeat, .beat_timeout = kBeatTimeout});
  ASSERT_TRUE(c.is_ok());
  EngineOptions o = slice_options(0, 1, false, false, kSmall);
  o.tail = *c;
  auto engine = open_engine(o);
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE((*c)->start(dist::hello_of(engine->info(), dist::build_id(), kCtx)).is_ok());
  const int mid = n_layer / 2;
  const std::string build(dist::build_id());
  WorkerThread w1(2, mid, false, (*c)->endpoint(), false, build, nullptr, kSmall);
  WorkerThread w2(mid + 1, n_layer - 1, true, (*c)->endpoint(), false, build, nullptr, kSmall);
  auto s = engine->create_session({.n_ctx = kCtx, .prefill_chunk = kChunk});
  auto ref = whole->create_session({.n_ctx = kCtx, .prefill_chunk = kChunk});
  ASSERT_TRUE(s.is_ok() && ref.is_ok());
  const std::vector<TokenId> prompt = test_prompt(kPromptTokens, 61);
  ASSERT_TRUE((*ref)->append(prompt).is_ok());
  auto st = (*s)->append(prompt);
  ASSERT_TRUE(st.is_ok()) << st.status().message();
  EXPECT_TRUE(same((*s)->logits(), (*ref)->logits()));
  for (int i = 0; i < kDecodeTokens; ++i) {
    const TokenId next = argmax_of((*ref)->logits());
    ASSERT_TRUE((*ref)->eval(next).is_ok());
    ASSERT_TRUE((*s)->eval(next).is_ok());
    EXPECT_TRUE(same((*s)->logits(), (*ref)->logits())) << "step " << i;
  }
}

}  // namespace
}  // namespace ds4::test
