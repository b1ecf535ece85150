// apps/server/main.cpp: `ds4-server` -- flags (each declared once with its help and default),
// wiring engine -> scheduler -> HTTP server, and signals: the first SIGINT/SIGTERM ends queued and
// running requests and stops the server (exit 0); a second one exits at once (130).
// Usage errors print one line and exit with code 2.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <thread>

#include "api/openai_request.h"
#include "apps/common/dist_options.h"
#include "apps/common/mapping_guard.h"
#include "apps/common/run_options.h"
#include "apps/server/api_key.h"
#include "ds4/chat.h"
#include "ds4/engine.h"
#include "ds4/tokenizer.h"
#include "http/server.h"
#include "serve/pool_size.h"
#include "serve/scheduler.h"

namespace {

constexpr int kUsageError = 2;

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "ds4-server: %s (see ds4-server --help)\n", msg.c_str());
  return kUsageError;
}

int fatal(const std::string& msg) {
  std::fprintf(stderr, "ds4-server: %s\n", msg.c_str());
  return 1;
}

// The server's smallest context per session: a rendered chat prompt with its reply.
constexpr int kMinServerCtx = 16;

struct Flags {
  ds4::app::RunOptions run;  // model, backend, threads, ctx, prefill chunk, chat template
  std::string host = "127.0.0.1";
  int port = 8000;
  int parallel = 0;  // 0: from free memory and --ctx (serve/pool_size.h)
  int batch_tokens = ds4::serve::kDefaultBatchTokens;
  double itl_target_ms = ds4::serve::kDefaultItlTargetMs;
  bool cors = false;
  std::string api_key, api_key_file;
  std::string trace;
  int tool_memory_max_ids = 100000;
  bool disable_exact_replay = false;
  int max_queue = 32;
  size_t max_body = 64u << 20;
  double header_timeout = 10, body_timeout = 10, idle_timeout = 5;  // seconds
  int max_connections = 4096, max_client_connections = 256;
  std::vector<std::string> forced_output;
  // Disk KV cache (features.md §3.4; docs/kvcache.md).
  std::string kv_disk_dir;
  uint64_t kv_disk_space_mb = 8192;
  ds4::serve::CachePolicyOptions kv;
  bool kv_reject_different_quant = false;
  bool special_tokens_in_client_text = false;
};

std::string model_name(const std::string& shape) {
  if (shape == "flash") return "DeepSeek V4 Flash";
  if (shape == "pro") return "DeepSeek V4 Pro";
  return "DeepSeek V4 (" + shape + " test shape)";
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"ds4-server: OpenAI-compatible HTTP server for DeepSeek V4 (docs/server.md)"};
  ds4::app::RunFlags run_flags(app, f.run,
                               ds4::app::kEngine | ds4::app::kCtx | ds4::app::kPrefillChunk |
                                   ds4::app::kChatTemplate | ds4::app::kMtp | ds4::app::kSteering |
                                   ds4::app::kPower,
                               "context size in tokens, per session");
  ds4::app::DistOptions dist;
  ds4::app::DistFlags dist_flags(app, dist, ds4::app::kDistCoordinator);
  app.add_option("--host", f.host, "address to bind (0.0.0.0 for the LAN)")->capture_default_str();
  app.add_option("--port", f.port, "TCP port (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--parallel", f.parallel,
                 "live sessions (requests running at once); 0: as many as half the free memory "
                 "holds at --ctx, at most 8")
      ->check(CLI::Range(0, 65536))
      ->capture_default_str();
  app.add_option("--batch-tokens", f.batch_tokens,
                 "token rows of one engine step: a row per decoding request, then prefill chunks "
                 "(at least --parallel)")
      ->check(CLI::Range(1, ds4::Engine::kMaxStepRows))
      ->capture_default_str();
  app.add_option("--itl-target-ms", f.itl_target_ms,
                 "while requests decode, prompt chunks are sized so a step takes about this long "
                 "(the decoding streams' inter-token latency beside a long prompt), unless more "
                 "requests prefill than decode; 0: off")
      ->check(CLI::Range(0.0, 60000.0))
      ->capture_default_str();
  app.add_flag("--cors", f.cors,
               "add Access-Control-Allow-* headers to every response (default: off)");
  auto* key_opt = app.add_option("--api-key", f.api_key,
                                 "require 'Authorization: Bearer KEY' on /v1/* (default: none; "
                                 "visible to local users in ps: prefer --api-key-file)");
  auto* key_file_opt = app.add_option(
      "--api-key-file", f.api_key_file,
      "read the API key from the first line of FILE (default: the DS4_API_KEY environment "
      "variable, else none)");
  app.add_option("--trace", f.trace, "write one JSON line per request to FILE (default: none)");
  app.add_option("--tool-memory-max-ids", f.tool_memory_max_ids,
                 "tool-call ids whose exact DSML is remembered")
      ->check(CLI::Range(0, 100000000))
      ->capture_default_str();
  app.add_flag("--disable-exact-dsml-tool-replay", f.disable_exact_replay,
               "render earlier tool calls canonically instead of as sampled (default: off)");
  app.add_option("--max-queue", f.max_queue, "requests that may wait; more get 429")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  app.add_option("--max-body", f.max_body, "largest request body in bytes; larger get 413")
      ->check(CLI::Range(size_t{1}, size_t{1} << 34))
      ->capture_default_str();
  app.add_option("--header-timeout", f.header_timeout,
                 "seconds a request's header may take to arrive (from its first byte, or from "
                 "the connection's start); later gets 408")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
  app.add_option("--body-timeout", f.body_timeout,
                 "seconds a request's body may stall (no byte arriving) before it gets 408")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
  app.add_option("--idle-timeout", f.idle_timeout,
                 "seconds an idle keep-alive connection stays open")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
  app.add_option("--max-connections", f.max_connections,
                 "open connections in all; more are answered 503 and closed")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--max-client-connections", f.max_client_connections,
                 "open connections from one client address; more are answered 503 and closed")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--kv-disk-dir", f.kv_disk_dir,
                 "keep KV checkpoints in DIR (created 0700) so sessions survive session switches "
                 "and restarts (default: off)");
  app.add_option("--kv-disk-space-mb", f.kv_disk_space_mb,
                 "disk KV cache budget in MiB; the least valuable files go first")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30))
      ->capture_default_str();
  app.add_option("--kv-cache-min-tokens", f.kv.min_tokens,
                 "no disk KV cache save or load below this many tokens")
      ->check(CLI::Range(size_t{1}, size_t{1} << 24))
      ->capture_default_str();
  app.add_option("--kv-cache-cold-max-tokens", f.kv.cold_max_tokens,
                 "longest prompt saved on a cold miss (0: no cold saves); longer files are "
                 "consumed when loaded")
      ->check(CLI::Range(size_t{0}, size_t{1} << 24))
      ->capture_default_str();
  app.add_option("--kv-cache-continued-interval-tokens", f.kv.continued_interval,
                 "save again every this many tokens (rounded up to the alignment; 0: never)")
      ->check(CLI::Range(size_t{0}, size_t{1} << 24))
      ->capture_default_str();
  app.add_option("--kv-cache-boundary-trim-tokens", f.kv.boundary_trim,
                 "tokens trimmed from the end of a cold save without a user-turn boundary")
      ->check(CLI::Range(size_t{0}, size_t{1} << 24))
      ->capture_default_str();
  app.add_option("--kv-cache-boundary-align-tokens", f.kv.boundary_align,
                 "cold and continued saves land on multiples of this (0: no alignment)")
      ->check(CLI::Range(size_t{0}, size_t{1} << 24))
      ->capture_default_str();
  app.add_flag("--kv-cache-reject-different-quant", f.kv_reject_different_quant,
               "load only checkpoints written by the same routed-expert quant (default: 2- and "
               "4-bit checkpoints are interchangeable)");
  app.add_flag("--special-tokens-in-client-text", f.special_tokens_in_client_text,
               "tokenize special-token strings inside client text (system, user and tool-result "
               "content, tool schemas) as control tokens, as ds4-server and the reference encoder "
               "do (default: off: they stay text, so a document cannot forge a turn)");
  app.add_option("--test-forced-output", f.forced_output,
                 "tests only: the first output of requests with tools (repeat the flag: the "
                 "i-th such request takes the i-th text, the last one repeats)")
      ->group("");  // hidden from --help
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what());
  }
  if (const std::string err = run_flags.finish(); !err.empty()) return usage_error(err);
  if (const std::string err = dist_flags.finish(); !err.empty()) return usage_error(err);
  if (f.run.ctx < kMinServerCtx) {
    return usage_error("--ctx " + std::to_string(f.run.ctx) + " is below " +
                       std::to_string(kMinServerCtx) + " tokens");
  }
  const ds4::chat::Template chat_template = f.run.chat_template;
  const char* env_key = std::getenv("DS4_API_KEY");
  auto api_key = ds4::server::resolve_api_key(
      {.flag = *key_opt ? std::optional<std::string>(f.api_key) : std::nullopt,
       .file = *key_file_opt ? std::optional<std::string>(f.api_key_file) : std::nullopt,
       .env = env_key ? std::optional<std::string>(env_key) : std::nullopt});
  if (!api_key.is_ok()) return usage_error(api_key.status().message());
  if (api_key->empty() && !ds4::server::is_loopback(f.host)) {
    std::fprintf(stderr,
                 "ds4-server: warning: listening on %s without an API key: anyone who reaches "
                 "this address can use the server (--api-key-file or DS4_API_KEY set one)\n",
                 f.host.c_str());
  }
  if (!f.kv_disk_dir.empty()) {
    if (const ds4::Status st = ds4::serve::validate(f.kv); !st.is_ok()) {
      return usage_error(st.message());
    }
  }
  if (!std::filesystem::exists(f.run.model)) {
    return usage_error("model file '" + f.run.model +
                       "' not found: get one with scripts/download_model.sh q2-imatrix");
  }

  ds4::app::install_mapping_guard();  // a model file truncated under the server: one clear line
  // Signals go to the watcher thread below only (blocked here, before any thread starts).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  // A file-size limit makes a cache write fail with EFBIG (the save is dropped, the server goes
  // on) instead of killing the process.
  std::signal(SIGXFSZ, SIG_IGN);

  auto tok = ds4::Tokenizer::open(f.run.model);
  if (!tok.is_ok()) return fatal(tok.status().to_string());
  auto engine = ds4::app::open_engine(ds4::app::engine_options(f.run), dist, f.run.ctx);
  if (!engine.is_ok()) return fatal(engine.status().to_string());
  const std::string shape = (*engine)->info().shape;
  // The session pool: --ctx tokens of KV state per session (docs/server.md, "Memory").
  const ds4::serve::PoolSizing pool = ds4::serve::size_pool(**engine, f.run.ctx);
  const int parallel = f.parallel != 0 ? f.parallel : pool.sessions;
  if (f.batch_tokens < parallel) {
    return usage_error("--batch-tokens " + std::to_string(f.batch_tokens) +
                       " is below the number of sessions (" + std::to_string(parallel) +
                       "): every decoding request needs its row in a step");
  }
  std::fprintf(stderr,
               "ds4-server: %d sessions of %d tokens (%s): %.1f MiB of KV state each, %.1f MiB "
               "in all; steps of up to %d tokens\n",
               parallel, f.run.ctx, f.parallel != 0 ? "--parallel" : pool.reason.c_str(),
               static_cast<double>(pool.session_bytes) / (1 << 20),
               static_cast<double>(pool.session_bytes) * parallel / (1 << 20), f.batch_tokens);
  // Exact DSML replay (features.md §2.4); without it earlier tool calls render canonically.
  std::unique_ptr<ds4::serve::ReplayMap> replay;
  if (!f.disable_exact_replay) {
    replay = std::make_unique<ds4::serve::ReplayMap>(static_cast<size_t>(f.tool_memory_max_ids));
  }
  // The disk KV cache (features.md §3): declared before the scheduler, which saves into it when
  // it stops, so it is destroyed after it (its destructor writes what is still queued).
  std::unique_ptr<ds4::serve::DiskCache> disk;
  if (!f.kv_disk_dir.empty()) {
    const ds4::ModelInfo& info = (*engine)->info();
    ds4::serve::DiskCacheOptions dco{
        .dir = f.kv_disk_dir,
        .budget_bytes = f.kv_disk_space_mb << 20,
        .query = {.min_tokens = static_cast<uint32_t>(f.kv.min_tokens),
                  .n_ctx = static_cast<uint32_t>(f.run.ctx),
                  .quant_bits = static_cast<uint8_t>(info.expert_bits),
                  .strict_quant = f.kv_reject_different_quant,
                  .model = shape == "pro" ? ds4::kv::KvcModel::kPro : ds4::kv::KvcModel::kFlash},
        .max_tool_ids = static_cast<size_t>(f.tool_memory_max_ids)};
    auto d = ds4::serve::DiskCache::open(std::move(dco), replay.get(), *tok);
    if (!d.is_ok()) return fatal("--kv-disk-dir " + f.kv_disk_dir + ": " + d.status().message());
    disk = std::move(*d);
    const auto st = disk->stats();
    std::fprintf(stderr, "ds4-server: kv cache: %zu files, %llu bytes in %s (budget %llu MiB)\n",
                 st.files, static_cast<unsigned long long>(st.bytes), f.kv_disk_dir.c_str(),
                 static_cast<unsigned long long>(f.kv_disk_space_mb));
  }
  auto scheduler = ds4::serve::Scheduler::start(std::move(*engine), *tok,
                                                {.n_ctx = f.run.ctx,
                                                 .prefill_chunk = f.run.prefill_chunk,
                                                 .max_queue = f.max_queue,
                                                 .sessions = parallel,
                                                 .batch_tokens = f.batch_tokens,
                                                 .itl_target_ms = f.itl_target_ms,
                                                 .cache = f.kv,
                                                 .drafting = ds4::app::drafting(f.run)},
                                                replay.get(), disk.get());
  if (!scheduler.is_ok()) return fatal(scheduler.status().to_string());

  ds4::api::ApiConfig config{
      .n_ctx = f.run.ctx,
      .model_id = std::string(shape == "pro" ? ds4::api::kProId : ds4::api::kFlashId),
      .chat_template = chat_template,
      .special_tokens_in_client_text = f.special_tokens_in_client_text,
      .steering_file = !f.run.steering_file.empty()};
  ds4::http::HttpOptions ho{.host = f.host,
                            .port = f.port,
                            .api_key = *api_key,
                            .cors = f.cors,
                            .max_body_bytes = f.max_body,
                            // A running stream and a waiting request each hold one.
                            .threads = f.max_queue + parallel + 16,
                            .header_timeout_ms = static_cast<int>(f.header_timeout * 1000),
                            .body_timeout_ms = static_cast<int>(f.body_timeout * 1000),
                            .idle_timeout_ms = static_cast<int>(f.idle_timeout * 1000),
                            .max_connections = f.max_connections,
                            .max_client_connections = f.max_client_connections,
                            .trace_path = f.trace,
                            .model_name = model_name(shape),
                            .forced_output = f.forced_output};
  auto server =
      ds4::http::HttpServer::bind(**scheduler, *tok, config, ho, replay.get(), disk.get());
  if (!server.is_ok()) return fatal(server.status().to_string());

  std::atomic<bool> finished{false};
  std::thread watcher([&] {
    int stops = 0;
    const timespec tick{0, 200 * 1000 * 1000};
    while (!finished.load()) {
      if (sigtimedwait(&signals, nullptr, &tick) < 0) continue;
      if (++stops > 1) _exit(130);
      std::fprintf(stderr, "ds4-server: stopping\n");
      (*scheduler)->shutdown();
      (*server)->stop();
    }
  });
  std::printf(
      "ds4-server: listening on http://%s:%d (model %s, ctx %d per session, %d sessions, backend "
      "%s, chat template %s)\n",
      f.host.c_str(), (*server)->port(), f.run.model.c_str(), f.run.ctx, parallel,
      f.run.backend.c_str(), ds4::chat::to_string(chat_template));
  std::fflush(stdout);
  const ds4::Status st = (*server)->run();
  finished = true;
  watcher.join();
  if (!st.is_ok()) return fatal(st.to_string());
  // Stop the scheduler first: its thread saves the live sessions (reason shutdown) into the disk
  // cache, whose destructor then writes them.
  server->reset();
  scheduler->reset();
  disk.reset();
  return 0;
}
