// apps/loadgen/main.cpp: `ds4-loadgen` (issue 26 item 5, issue 55) -- N concurrent streaming
// clients against a running ds4-server, each sending R chat requests in turn from a fixed prompt
// mix (cut from one text file at offsets that differ per request). Writes one CSV row per request
// (--csv) and a one-row summary CSV on stdout: the whole-run aggregate and the decode-phase one
// (stats.h: while every client decodes), per-stream tokens/s, time to first token and inter-token
// latency p50/p99.
// With --long-prompt-chars, the long-prompt scenario: one request with a prompt that long runs
// alone first, then again (cut elsewhere, so nothing is reused) once every client is decoding;
// the summary adds the prefill rate of each (uncached prompt tokens over time to first token),
// their ratio, and the clients' inter-token gaps while the second one prefilled.
// Usage errors: one line, exit 2; a failed request is a row with its error and makes the exit
// status 1.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "apps/common/run_options.h"
#include "apps/loadgen/stats.h"
#include "apps/loadgen/stream_client.h"

namespace {

using ds4::loadgen::DecodeTimes;
using ds4::loadgen::percentile;
using ds4::loadgen::StreamRequest;
using ds4::loadgen::StreamResult;

std::string csv_field(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

struct Row {
  const char* role = "client";  // "client", "long-alone" or "long-beside"
  int client = 0, request = 0;
  StreamResult r;
};

// Counts the clients whose first request has started decoding (or ended without a token), so
// the long prompt goes in once every client decodes.
class Gate {
 public:
  explicit Gate(int n) : left_(n) {}
  void pass() {
    const std::lock_guard<std::mutex> lock(mu_);
    if (--left_ <= 0) cv_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return left_ <= 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int left_;
};

// Uncached prompt tokens over the time to the first token.
double prefill_rate(const StreamResult& r) {
  return r.ok && r.ttft_s > 0 ? (r.prompt_tokens - r.cached_tokens) / r.ttft_s : 0;
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  StreamRequest base;
  int clients = 1, requests = 1, prompt_chars = 8000, long_chars = 0;
  std::string prompt_file, csv_path;
  CLI::App app{"ds4-loadgen: concurrent streaming clients against ds4-server"};
  app.add_option("--host", base.host, "server address")->capture_default_str();
  app.add_option("--port", base.port, "server port")->capture_default_str();
  app.add_option("--api-key", base.api_key, "Bearer token (when the server has --api-key)");
  app.add_option("-c,--clients", clients, "concurrent streams")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("-r,--requests", requests, "requests per client, one after another")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("-n,--max-tokens", base.max_tokens, "max_tokens of each request")
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  app.add_option("--prompt-file", prompt_file, "text the prompts are cut from")->required();
  app.add_option("--prompt-chars", prompt_chars, "characters per prompt")
      ->check(CLI::Range(1, 1 << 26))
      ->capture_default_str();
  app.add_option("--long-prompt-chars", long_chars,
                 "the long-prompt scenario: a prompt of this many characters alone, then beside "
                 "the decoding clients (0: off)")
      ->check(CLI::Range(0, 1 << 28))
      ->capture_default_str();
  // The think mode, as every program declares it (apps/common/run_options.h); no thinking unless
  // asked for (deepseek-chat semantics).
  ds4::app::RunOptions run{.think = ds4::chat::ThinkMode::kNone};
  ds4::app::RunFlags run_flags(app, run, ds4::app::kThink);
  app.add_option("--timeout", base.timeout_s, "seconds a request may take")->capture_default_str();
  app.add_option("--csv", csv_path, "per-request CSV (default: none)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "ds4-loadgen: %s\n", e.what());
    return 2;
  }
  if (const std::string err = run_flags.finish(); !err.empty()) {
    std::fprintf(stderr, "ds4-loadgen: %s\n", err.c_str());
    return 2;
  }
  base.thinking = run.think != ds4::chat::ThinkMode::kNone;
  if (run.think == ds4::chat::ThinkMode::kMax) base.reasoning_effort = "max";
  std::ifstream in(prompt_file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "ds4-loadgen: cannot read prompt file '%s'\n", prompt_file.c_str());
    return 2;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  if (text.empty()) {
    std::fprintf(stderr, "ds4-loadgen: prompt file '%s' is empty\n", prompt_file.c_str());
    return 2;
  }

  // The prompt mix: request k starts at a different offset (a fixed stride through the text),
  // cut back to a UTF-8 character boundary so every prompt is valid UTF-8.
  auto prompt_for = [&](size_t k, int chars) {
    const size_t len = std::min<size_t>(static_cast<size_t>(chars), text.size());
    const size_t span = text.size() - len;
    size_t at = span == 0 ? 0 : (k * 7919u) % (span + 1);
    while (at > 0 && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;
    size_t end = std::min(text.size(), at + len);
    while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    return text.substr(at, end - at);
  };

  const size_t n_client_rows = static_cast<size_t>(clients) * static_cast<size_t>(requests);
  std::vector<Row> rows(n_client_rows);
  Row long_alone{.role = "long-alone", .client = clients},
      long_beside{.role = "long-beside", .client = clients};
  if (long_chars > 0) {
    // Alone first: the rate the scenario's prefill is compared with. Cut at a different offset
    // from the second, so the second reuses nothing of it.
    StreamRequest r = base;
    r.prompt = prompt_for(n_client_rows, long_chars);
    long_alone.r = ds4::loadgen::run_stream(r);
  }
  Gate all_decoding(clients);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      for (int q = 0; q < requests; ++q) {
        StreamRequest r = base;
        r.prompt = prompt_for(static_cast<size_t>(c * requests + q), prompt_chars);
        bool passed = false;
        if (q == 0) {
          r.on_first_token = [&] {
            all_decoding.pass();
            passed = true;
          };
        }
        Row& row = rows[static_cast<size_t>(c * requests + q)];
        row.client = c;
        row.request = q;
        row.r = ds4::loadgen::run_stream(r);
        if (q == 0 && !passed) all_decoding.pass();
      }
    });
  }
  if (long_chars > 0) {
    threads.emplace_back([&] {
      all_decoding.wait();
      StreamRequest r = base;
      r.prompt = prompt_for(n_client_rows + 1, long_chars);
      long_beside.r = ds4::loadgen::run_stream(r);
    });
  }
  for (std::thread& t : threads) t.join();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::FILE* csv = csv_path.empty() ? nullptr : std::fopen(csv_path.c_str(), "w");
  if (!csv_path.empty() && csv == nullptr) {
    std::fprintf(stderr, "ds4-loadgen: cannot write '%s'\n", csv_path.c_str());
    return 2;
  }
  if (csv != nullptr)
    std::fprintf(csv,
                 "role,client,request,ok,prompt_tokens,cached_tokens,completion_tokens,ttft_ms,"
                 "total_s,stream_tokens_per_s,itl_p50_ms,itl_p99_ms,finish,error\n");
  std::vector<double> ttft, itl, per_stream;
  std::vector<DecodeTimes> phases;
  long total_tokens = 0;
  int failed = 0;
  std::vector<const Row*> all;
  for (const Row& row : rows) all.push_back(&row);
  if (long_chars > 0) all.insert(all.end(), {&long_alone, &long_beside});
  for (const Row* row : all) {
    const StreamResult& r = row->r;
    const std::vector<double> gaps = r.gaps();
    const bool client = row->client < clients;
    const double gen_s = r.total_s - r.ttft_s;
    // Decode rate after the first token: the tokens past the first over the time they took.
    const double rate =
        r.completion_tokens > 1 && gen_s > 0 ? (r.completion_tokens - 1) / gen_s : 0;
    if (!r.ok) {
      ++failed;
    } else if (client) {
      ttft.push_back(r.ttft_s * 1e3);
      for (double g : gaps) itl.push_back(g * 1e3);
      per_stream.push_back(rate);
      total_tokens += r.completion_tokens;
      phases.push_back({.tokens = r.token_at, .end = r.ended_at});
    }
    if (csv != nullptr)
      std::fprintf(csv, "%s,%d,%d,%d,%d,%d,%d,%.3f,%.4f,%.2f,%.3f,%.3f,%s,%s\n", row->role,
                   row->client, row->request, r.ok ? 1 : 0, r.prompt_tokens, r.cached_tokens,
                   r.completion_tokens, r.ttft_s * 1e3, r.total_s, rate, percentile(gaps, 50) * 1e3,
                   percentile(gaps, 99) * 1e3, r.finish_reason.c_str(), csv_field(r.error).c_str());
  }
  if (csv != nullptr) std::fclose(csv);

  const ds4::loadgen::DecodePhase decode = ds4::loadgen::decode_phase(phases, clients);
  // The long-prompt columns: empty without the scenario.
  std::string long_cols = ",,,,,,,";
  if (long_chars > 0 && long_beside.r.ok) {
    const StreamResult& b = long_beside.r;
    const double from = b.sent_at, to = b.sent_at + b.ttft_s;
    const std::vector<double> gaps = ds4::loadgen::gaps_within(phases, from, to);
    // Clients decoding when the long prompt's first token came: a client's requests run one after
    // another, so the phases open at that moment are one per client.
    int through = 0;
    for (const DecodeTimes& p : phases)
      through += !p.tokens.empty() && p.tokens.front() <= to && p.end >= to;
    if (through < clients)
      std::fprintf(stderr,
                   "ds4-loadgen: %d of %d clients ended before the long prompt's first token: "
                   "its prefill had fewer decoders beside it (raise -n)\n",
                   clients - through, clients);
    const double alone = prefill_rate(long_alone.r), beside = prefill_rate(b);
    long_cols = std::to_string(b.prompt_tokens - b.cached_tokens) + "," + fmt(alone) + "," +
                fmt(beside) + "," + fmt(alone > 0 ? beside / alone : 0) + "," +
                std::to_string(through) + "," + fmt(percentile(gaps, 50) * 1e3) + "," +
                fmt(percentile(gaps, 99) * 1e3);
  }
  std::printf(
      "clients,requests,failed,completion_tokens,wall_s,aggregate_tokens_per_s,"
      "decode_aggregate_tokens_per_s,decode_phase_s,stream_tokens_per_s_min,"
      "stream_tokens_per_s_p50,ttft_p50_ms,ttft_p99_ms,itl_p50_ms,itl_p99_ms,"
      "long_prompt_tokens,long_alone_prefill_tokens_per_s,long_beside_prefill_tokens_per_s,"
      "long_prefill_ratio,long_decoders_beside,itl_during_long_p50_ms,itl_during_long_p99_ms\n");
  std::printf("%d,%zu,%d,%ld,%.3f,%.2f,%.2f,%.3f,%.2f,%.2f,%.3f,%.3f,%.3f,%.3f,%s\n", clients,
              rows.size(), failed, total_tokens, wall, wall > 0 ? total_tokens / wall : 0,
              decode.tokens_per_s(), decode.seconds,
              per_stream.empty() ? 0 : *std::min_element(per_stream.begin(), per_stream.end()),
              percentile(per_stream, 50), percentile(ttft, 50), percentile(ttft, 99),
              percentile(itl, 50), percentile(itl, 99), long_cols.c_str());
  for (const Row* row : all) {
    if (!row->r.ok)
      std::fprintf(stderr, "ds4-loadgen: %s %d request %d: %s\n", row->role, row->client,
                   row->request, row->r.error.c_str());
  }
  return failed == 0 ? 0 : 1;
}
