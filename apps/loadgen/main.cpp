// apps/loadgen/main.cpp: `ds4-loadgen` (issue 26 item 5) -- N concurrent streaming clients
// against a running ds4-server, each sending R chat requests in turn from a fixed prompt mix (cut
// from one text file at offsets that differ per request). Writes one CSV row per request
// (--csv) and a one-row summary CSV on stdout: aggregate and per-stream tokens/s, time to first
// token p50/p99, inter-token latency p50/p99. Usage errors: one line, exit 2; a failed request
// is a row with its error and makes the exit status 1.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "apps/common/run_options.h"
#include "apps/loadgen/stream_client.h"

namespace {

using ds4::loadgen::StreamRequest;
using ds4::loadgen::StreamResult;

// Nearest-rank percentile of `v` (p in [0, 100]); 0 for no values.
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::string csv_field(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

struct Row {
  int client = 0, request = 0;
  StreamResult r;
};

}  // namespace

int main(int argc, char** argv) {
  StreamRequest base;
  int clients = 1, requests = 1, prompt_chars = 8000;
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
  auto prompt_for = [&](int k) {
    const size_t len = std::min<size_t>(static_cast<size_t>(prompt_chars), text.size());
    const size_t span = text.size() - len;
    size_t at = span == 0 ? 0 : (static_cast<size_t>(k) * 7919u) % (span + 1);
    while (at > 0 && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;
    size_t end = std::min(text.size(), at + len);
    while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    return text.substr(at, end - at);
  };

  std::vector<Row> rows(static_cast<size_t>(clients) * static_cast<size_t>(requests));
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      for (int q = 0; q < requests; ++q) {
        StreamRequest r = base;
        r.prompt = prompt_for(c * requests + q);
        Row& row = rows[static_cast<size_t>(c * requests + q)];
        row.client = c;
        row.request = q;
        row.r = ds4::loadgen::run_stream(r);
      }
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
                 "client,request,ok,prompt_tokens,cached_tokens,completion_tokens,ttft_ms,"
                 "total_s,stream_tokens_per_s,itl_p50_ms,itl_p99_ms,finish,error\n");
  std::vector<double> ttft, itl, per_stream;
  long total_tokens = 0;
  int failed = 0;
  for (const Row& row : rows) {
    const StreamResult& r = row.r;
    const double gen_s = r.total_s - r.ttft_s;
    // Decode rate after the first token: the tokens past the first over the time they took.
    const double rate =
        r.completion_tokens > 1 && gen_s > 0 ? (r.completion_tokens - 1) / gen_s : 0;
    if (r.ok) {
      ttft.push_back(r.ttft_s * 1e3);
      for (double g : r.gaps_s) itl.push_back(g * 1e3);
      per_stream.push_back(rate);
      total_tokens += r.completion_tokens;
    } else {
      ++failed;
    }
    if (csv != nullptr)
      std::fprintf(csv, "%d,%d,%d,%d,%d,%d,%.3f,%.4f,%.2f,%.3f,%.3f,%s,%s\n", row.client,
                   row.request, r.ok ? 1 : 0, r.prompt_tokens, r.cached_tokens, r.completion_tokens,
                   r.ttft_s * 1e3, r.total_s, rate,
                   percentile(std::vector<double>(r.gaps_s.begin(), r.gaps_s.end()), 50) * 1e3,
                   percentile(std::vector<double>(r.gaps_s.begin(), r.gaps_s.end()), 99) * 1e3,
                   r.finish_reason.c_str(), csv_field(r.error).c_str());
  }
  if (csv != nullptr) std::fclose(csv);
  std::printf(
      "clients,requests,failed,completion_tokens,wall_s,aggregate_tokens_per_s,"
      "stream_tokens_per_s_min,stream_tokens_per_s_p50,ttft_p50_ms,ttft_p99_ms,itl_p50_ms,"
      "itl_p99_ms\n");
  std::printf("%d,%zu,%d,%ld,%.3f,%.2f,%.2f,%.2f,%.3f,%.3f,%.3f,%.3f\n", clients, rows.size(),
              failed, total_tokens, wall, wall > 0 ? total_tokens / wall : 0,
              per_stream.empty() ? 0 : *std::min_element(per_stream.begin(), per_stream.end()),
              percentile(per_stream, 50), percentile(ttft, 50), percentile(ttft, 99),
              percentile(itl, 50), percentile(itl, 99));
  for (const Row& row : rows) {
    if (!row.r.ok)
      std::fprintf(stderr, "ds4-loadgen: client %d request %d: %s\n", row.client, row.request,
                   row.r.error.c_str());
  }
  return failed == 0 ? 0 : 1;
}
