// apps/bench/main.cpp: `ds4-bench` (features.md §6) -- prefill and generation speed as the
// context grows. One session is extended frontier by frontier (only the new tokens are
// prefilled); at each frontier the session is snapshotted, a fixed greedy probe is decoded, and
// the snapshot is restored so the next interval continues from the frontier. One CSV row per
// frontier; usage errors print one line and exit with code 2.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "apps/common/dist_options.h"
#include "apps/common/mapping_guard.h"
#include "apps/common/run_options.h"
#include "ds4/engine.h"
#include "ds4/sampling.h"
#include "ds4/session.h"
#include "ds4/tokenizer.h"
#include "multi.h"

namespace {

using ds4bench::greedy_no_eos;

constexpr int kUsageError = 2;
constexpr int kRunError = 1;

struct BenchOptions {
  // Model, backend, threads, prefill chunk and the session context (0 here: ctx_max +
  // gen_tokens + 1).
  ds4::app::RunOptions run{.ctx = 0};
  std::string prompt_file;
  int ctx_start = 2048;
  int ctx_max = 32768;
  int step_incr = 2048;
  double step_mul = 1.0;
  int gen_tokens = 128;
  std::string csv;  // empty: stdout
  bool print_probe = false;
  bool op_times = false;      // print the host time spent in each backend op while generating
  std::string repeat_op;      // a backend op whose work every call issues twice (diagnostics)
  std::vector<int> sessions;  // --sessions: the multi-session decode mode (multi.h)
  int stride = 1024;
  std::vector<int> spec_replay;  // --spec-replay N[,N..]: the probe again, N drafts per step
};

struct Row {
  int frontier = 0;
  int prefill_tokens = 0;
  double prefill_s = 0;
  int gen_tokens = 0;
  double gen_s = 0;
  uint64_t kv_bytes = 0;
  double snapshot_s = 0;
  double restore_s = 0;
};

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "ds4-bench: %s (see ds4-bench --help)\n", msg.c_str());
  return kUsageError;
}

int run_error(const std::string& what, const ds4::Status& st) {
  std::fprintf(stderr, "ds4-bench: %s: %s\n", what.c_str(), st.message().c_str());
  return kRunError;
}

// --spec-replay N (issue 51's replay mode): the probe just decoded is decoded again from the
// frontier with Session::verify_greedy, its own tokens as the drafts, N per step -- acceptance
// 100% unless the model's argmax is EOS, which the probe skips -- so the rate is what speculative
// decoding gives when every draft is right. With `mtp` ("mtp replay", --mtp with --spec-replay)
// each step first has the MTP block draft its N - 1 tokens and drops them: the rate then pays for
// the drafting too, the end-to-end rate of MTP decoding at acceptance 100%. The tokens must be the
// probe's (else an error); the snapshot, when given, is restored after.
ds4::Status replay_probe(ds4::Session& s, const std::vector<ds4::TokenId>& probe, int n, int f,
                         const std::vector<uint8_t>* snap, bool mtp) {
  const auto t0 = std::chrono::steady_clock::now();
  size_t at = 0;
  int steps = 0, drafted = 0, kept = 0;
  while (at < probe.size()) {
    const size_t take = std::min(probe.size() - at, static_cast<size_t>(n));
    if (mtp && take > 1 && s.can_draft()) {
      DS4_TRY(s.draft(probe[at], static_cast<int>(take) - 1).status());
    }
    DS4_ASSIGN_OR_RETURN(int k, s.verify_greedy(std::span(probe).subspan(at, take)));
    ++steps;
    drafted += static_cast<int>(take);
    kept += k;
    at += static_cast<size_t>(k);
    if (k == 0) DS4_TRY(s.eval(probe[at++]));  // the probe's token, not the argmax (EOS skipped)
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr,
               "ds4-bench: ctx %d: %sreplay of %zu tokens with %d drafts per step: %.2f t/s, %d "
               "steps, %d of %d drafts kept, %.2f ms per step\n",
               f, mtp ? "mtp " : "", probe.size(), n, secs > 0 ? probe.size() / secs : 0.0, steps,
               kept, drafted, steps > 0 ? secs * 1e3 / steps : 0.0);
  const std::span<const ds4::TokenId> done = s.tokens().last(probe.size());
  if (!std::equal(done.begin(), done.end(), probe.begin())) {
    return ds4::Status::internal("the replay decoded other tokens than the probe");
  }
  return snap ? s.load(*snap) : ds4::Status::ok();
}

// --mtp (issue 51): the probe's tokens decoded again through Session::step_greedy -- the MTP
// block's drafts after each greedy token, verified in one batch -- in a session of its own that
// reached the frontier by prefill (a snapshot gives the block no context). Random weights make
// the drafts' acceptance meaningless; the rate and the time per step are what it measures, and
// the tokens must be the probe's.
ds4::Status mtp_decode(ds4::Session& m, const std::vector<ds4::TokenId>& tokens, int f,
                       const std::vector<ds4::TokenId>& probe, int drafts, float margin) {
  DS4_TRY(m.sync(std::span(tokens).first(static_cast<size_t>(f))).status());
  const auto t0 = std::chrono::steady_clock::now();
  const size_t end = static_cast<size_t>(f) + probe.size();
  int steps = 0, kept = 0;
  while (static_cast<size_t>(m.n_tokens()) < end) {
    DS4_ASSIGN_OR_RETURN(int n, m.step_greedy(drafts, margin));
    ++steps;
    kept += n - 1;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::span<const ds4::TokenId> got = m.tokens().subspan(static_cast<size_t>(f));
  const auto diff = std::mismatch(probe.begin(), probe.end(), got.begin(), got.end());
  std::fprintf(stderr,
               "ds4-bench: ctx %d: mtp decode of %zu tokens with %d drafts per step: %.2f t/s, %d "
               "steps, %d drafts kept, %.2f ms per step, %s\n",
               f, got.size(), drafts, secs > 0 ? got.size() / secs : 0.0, steps, kept,
               steps > 0 ? secs * 1e3 / steps : 0.0,
               diff.first == probe.end() ? "the probe's tokens"
                                         : ("tokens differ from the probe's at " +
                                            std::to_string(diff.first - probe.begin()))
                                               .c_str());
  return ds4::Status::ok();
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double per_second(double n, double s) { return s > 0 ? n / s : 0.0; }

// ctx_start, then max(cur + step_incr, ceil(cur * step_mul)), clamped to ctx_max (which is always
// the last frontier).
std::vector<int> frontiers(const BenchOptions& o) {
  std::vector<int> out{o.ctx_start};
  while (out.back() < o.ctx_max) {
    const double cur = out.back();
    const double next = std::max(cur + o.step_incr, std::ceil(cur * o.step_mul));
    out.push_back(static_cast<int>(std::min<double>(next, o.ctx_max)));
  }
  return out;
}

// BOS, then the text's tokens repeated until there are at least ctx_max tokens in all.
std::vector<ds4::TokenId> bench_tokens(const ds4::Tokenizer& tok, const std::string& text,
                                       int ctx_max, int* text_tokens) {
  const std::vector<ds4::TokenId> body = tok.encode(text, ds4::SpecialTokens::kAsText);
  *text_tokens = static_cast<int>(body.size());
  std::vector<ds4::TokenId> out{tok.special_ids().bos};
  if (body.empty()) return out;
  while (out.size() < static_cast<size_t>(ctx_max)) {
    const size_t take = std::min(body.size(), static_cast<size_t>(ctx_max) - out.size());
    out.insert(out.end(), body.begin(), body.begin() + static_cast<std::ptrdiff_t>(take));
  }
  return out;
}

// The CSV's destination: the --csv file, or stdout when none is given; null when it cannot be
// opened.
FILE* open_csv(const std::string& path) {
  return path.empty() ? stdout : std::fopen(path.c_str(), "w");
}

// Closes a CSV file (stdout stays open); a failed close is a run error, else rc.
int close_csv(FILE* csv, const std::string& path, int rc) {
  if (csv != stdout && std::fclose(csv) != 0) {
    std::fprintf(stderr, "ds4-bench: cannot write CSV file '%s'\n", path.c_str());
    return kRunError;
  }
  return rc;
}

void write_row(FILE* csv, const Row& r) {
  std::fprintf(csv, "%d,%d,%.6f,%.2f,%d,%.6f,%.2f,%" PRIu64 ",%.6f,%.6f\n", r.frontier,
               r.prefill_tokens, r.prefill_s, per_second(r.prefill_tokens, r.prefill_s),
               r.gen_tokens, r.gen_s, per_second(r.gen_tokens, r.gen_s), r.kv_bytes, r.snapshot_s,
               r.restore_s);
  std::fflush(csv);
}

// --op-times: the host wall time per generated token spent inside each backend op (with an
// asynchronous backend, the time to queue its work; the wait for the device lands in the op
// that downloads) and outside them.
void print_op_times(const ds4::Engine& e, int frontier, const Row& r) {
  std::string line = "ds4-bench: ctx " + std::to_string(frontier) + ": host ms per token:";
  double in_ops = 0;
  char buf[64];
  for (const ds4::OpTime& t : e.op_times()) {
    if (t.calls == 0) continue;
    in_ops += t.seconds;
    std::snprintf(buf, sizeof buf, " %s %.3f", std::string(t.op).c_str(),
                  1e3 * t.seconds / r.gen_tokens);
    line += buf;
  }
  std::snprintf(buf, sizeof buf, ", outside ops %.3f", 1e3 * (r.gen_s - in_ops) / r.gen_tokens);
  std::fprintf(stderr, "%s%s\n", line.c_str(), buf);
}

// Runs the sweep, writing one CSV row per frontier. Returns the process exit code.
int run_sweep(ds4::Engine& e, ds4::Session& s, ds4::Session* mtp,
              const std::vector<ds4::TokenId>& tokens, ds4::TokenId eos, const BenchOptions& o,
              FILE* csv, std::vector<Row>* rows) {
  using Clock = std::chrono::steady_clock;
  for (const int f : frontiers(o)) {
    Row r;
    r.frontier = f;
    const int cur = s.n_tokens();
    r.prefill_tokens = f - cur;
    auto t0 = Clock::now();
    auto app = s.append(std::span<const ds4::TokenId>(tokens).subspan(cur, f - cur));
    r.prefill_s = seconds_since(t0);
    if (!app.is_ok()) return run_error("prefill to " + std::to_string(f), app.status());

    t0 = Clock::now();
    auto snap = s.save();
    r.snapshot_s = seconds_since(t0);
    if (!snap.is_ok()) return run_error("snapshot at " + std::to_string(f), snap.status());
    r.kv_bytes = snap->size();

    std::vector<ds4::TokenId> probe;
    probe.reserve(static_cast<size_t>(o.gen_tokens));
    e.reset_op_times();
    t0 = Clock::now();
    for (int i = 0; i < o.gen_tokens; ++i) {
      const ds4::TokenId id = greedy_no_eos(s.logits(), eos);
      probe.push_back(id);
      if (auto st = s.eval(id); !st.is_ok()) {
        return run_error("generation at " + std::to_string(f), st);
      }
    }
    r.gen_s = seconds_since(t0);
    r.gen_tokens = o.gen_tokens;
    if (o.op_times) print_op_times(e, f, r);

    t0 = Clock::now();
    ds4::Status st = s.load(*snap);
    r.restore_s = seconds_since(t0);
    if (!st.is_ok()) return run_error("restore at " + std::to_string(f), st);
    if (s.n_tokens() != f) {
      return run_error("restore at " + std::to_string(f),
                       ds4::Status::internal("session holds %d tokens", s.n_tokens()));
    }

    for (const int n : o.spec_replay) {
      if (const ds4::Status rs = replay_probe(s, probe, n, f, &*snap, false); !rs.is_ok()) {
        return run_error("speculative replay at " + std::to_string(f), rs);
      }
    }
    if (mtp != nullptr) {
      if (const ds4::Status ms =
              mtp_decode(*mtp, tokens, f, probe, o.run.mtp_draft, o.run.mtp_margin);
          !ms.is_ok()) {
        return run_error("MTP decode at " + std::to_string(f), ms);
      }
      for (const int n : o.spec_replay) {
        ds4::Status rs = mtp->sync(std::span(tokens).first(static_cast<size_t>(f))).status();
        if (rs.is_ok()) rs = replay_probe(*mtp, probe, n, f, nullptr, true);
        if (!rs.is_ok()) return run_error("MTP replay at " + std::to_string(f), rs);
      }
    }
    write_row(csv, r);
    rows->push_back(r);
    if (o.print_probe) {
      std::string line = "probe " + std::to_string(f) + ":";
      for (const ds4::TokenId id : probe) line += " " + std::to_string(id);
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fprintf(stderr,
                 "ds4-bench: ctx %d: prefill %d tokens %.2f t/s, gen %d tokens %.2f t/s, "
                 "kv %.1f MiB (save %.1f ms, restore %.1f ms)\n",
                 f, r.prefill_tokens, per_second(r.prefill_tokens, r.prefill_s), r.gen_tokens,
                 per_second(r.gen_tokens, r.gen_s), r.kv_bytes / 1048576.0, r.snapshot_s * 1e3,
                 r.restore_s * 1e3);
  }
  return 0;
}

void print_summary(const std::vector<Row>& rows) {
  if (rows.empty()) return;
  int prefilled = 0;
  double prefill_s = 0;
  for (const Row& r : rows) {
    prefilled += r.prefill_tokens;
    prefill_s += r.prefill_s;
  }
  const Row& a = rows.front();
  const Row& b = rows.back();
  std::fprintf(stderr,
               "ds4-bench: %zu frontier%s %d..%d: prefill %d tokens in %.3f s (%.2f t/s overall); "
               "gen %.2f t/s at %d, %.2f t/s at %d; kv %" PRIu64 " -> %" PRIu64 " bytes\n",
               rows.size(), rows.size() == 1 ? "" : "s", a.frontier, b.frontier, prefilled,
               prefill_s, per_second(prefilled, prefill_s), per_second(a.gen_tokens, a.gen_s),
               a.frontier, per_second(b.gen_tokens, b.gen_s), b.frontier, a.kv_bytes, b.kv_bytes);
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions o;
  CLI::App app{"ds4-bench: prefill and generation speed as the context grows (CSV per frontier)"};
  ds4::app::RunFlags run_flags(app, o.run,
                               ds4::app::kEngine | ds4::app::kCtx | ds4::app::kPrefillChunk |
                                   ds4::app::kMtp | ds4::app::kPower,
                               "session context (0: ctx-max + gen-tokens + 1)");
  ds4::app::DistOptions dist;
  ds4::app::DistFlags dist_flags(app, dist, ds4::app::kDistCoordinator);
  // The ds4 engine's name for --ctx.
  app.add_option("--ctx-alloc", o.run.ctx, "same as --ctx")->check(CLI::Range(2, 1048576));
  app.add_option("--prompt-file", o.prompt_file,
                 "text to benchmark on (tokenized as plain text, repeated up to --ctx-max)")
      ->required();
  app.add_option("--ctx-start", o.ctx_start, "first frontier in tokens")
      ->check(CLI::Range(1, 1048576))
      ->capture_default_str();
  app.add_option("--ctx-max", o.ctx_max, "last frontier in tokens")
      ->check(CLI::Range(1, 1048576))
      ->capture_default_str();
  app.add_option("--step-incr", o.step_incr, "frontier growth: next >= current + N")
      ->check(CLI::Range(1, 1048576))
      ->capture_default_str();
  app.add_option("--step-mul", o.step_mul, "frontier growth: next >= ceil(current * F)")
      ->check(CLI::Range(1.0, 1024.0))
      ->capture_default_str();
  app.add_option("-n,--gen-tokens,--tokens", o.gen_tokens, "greedy tokens decoded at each frontier")
      ->check(CLI::Range(1, 1048576))
      ->capture_default_str();
  app.add_option("--csv", o.csv, "write the CSV here (default: stdout)");
  app.add_flag("--print-probe", o.print_probe, "print each probe's token ids on stderr");
  app.add_option("--spec-replay", o.spec_replay,
                 "decode each probe again by speculative verification, its own tokens as the "
                 "drafts, N per step (acceptance 100%%): the rate speculative decoding reaches; "
                 "a list (2,3,4) replays once per N")
      ->delimiter(',')
      ->check(CLI::Range(1, 16));
  app.add_flag("--op-times", o.op_times,
               "print the host time per generated token in each backend op (stderr)");
  app.add_option("--repeat-op", o.repeat_op,
                 "issue this backend op's work twice per call (rms_norm, matmul, hc_pre, hc_post, "
                 "moe, output_head): the slowdown against a run without is the op's cost in place; "
                 "matmul:TYPE:ROWS repeats only the products of that weight type and output rows "
                 "(e.g. matmul:q8_0:4096)");
  app.add_option("--sessions", o.sessions,
                 "multi-session decode mode: for each N, N sessions prefilled to --ctx-start "
                 "tokens decode --gen-tokens steps together (one CSV row per N)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024));
  app.add_option("--stride", o.stride,
                 "multi-session mode: session i's text starts stride * i tokens in")
      ->check(CLI::Range(1, 1048576))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what());
  }
  if (const std::string err = run_flags.finish(); !err.empty()) return usage_error(err);
  if (const std::string err = dist_flags.finish(); !err.empty()) return usage_error(err);
  if (o.ctx_start > o.ctx_max) {
    return usage_error("--ctx-start " + std::to_string(o.ctx_start) + " is above --ctx-max " +
                       std::to_string(o.ctx_max));
  }
  if (!o.sessions.empty()) o.ctx_max = o.ctx_start;  // every session sits at ctx_start
  const int64_t needed = int64_t{o.ctx_max} + o.gen_tokens + 1;
  if (o.run.ctx == 0) {
    if (needed > 1048576) return usage_error("--ctx-max + --gen-tokens exceed 1048575 tokens");
    o.run.ctx = static_cast<int>(needed);
  }
  if (o.run.ctx < needed) {
    return usage_error("--ctx " + std::to_string(o.run.ctx) +
                       " must exceed --ctx-max + --gen-tokens (" + std::to_string(needed - 1) +
                       ")");
  }
  std::ifstream pf(o.prompt_file, std::ios::binary);
  if (!pf) return usage_error("cannot read prompt file '" + o.prompt_file + "'");
  const std::string text((std::istreambuf_iterator<char>(pf)), {});
  if (!std::filesystem::exists(o.run.model)) {
    return usage_error("model file '" + o.run.model +
                       "' not found: get one with scripts/download_model.sh q2-imatrix");
  }

  auto tok = ds4::Tokenizer::open(o.run.model);
  if (!tok.is_ok()) return usage_error(tok.status().message());
  if (tok->special_ids().bos < 0) return usage_error("the model's vocabulary has no BOS token");
  int text_tokens = 0;
  const int max_sessions =
      o.sessions.empty() ? 1 : *std::max_element(o.sessions.begin(), o.sessions.end());
  const int64_t span_tokens = int64_t{o.stride} * (max_sessions - 1) + o.ctx_max;
  if (span_tokens > (int64_t{1} << 28)) return usage_error("--stride x --sessions is too large");
  const std::vector<ds4::TokenId> tokens =
      bench_tokens(*tok, text, static_cast<int>(span_tokens), &text_tokens);
  if (text_tokens == 0) return usage_error("prompt file '" + o.prompt_file + "' has no text");

  ds4::EngineOptions eo = ds4::app::engine_options(o.run);
  eo.profile_ops = o.op_times;
  eo.repeat_op = o.repeat_op;
  ds4::app::install_mapping_guard();
  auto engine = ds4::app::open_engine(eo, dist, o.run.ctx);
  if (!engine.is_ok()) return usage_error(engine.status().message());
  ds4::Engine& e = **engine;
  if (!o.sessions.empty()) {
    if (!o.run.mtp.empty()) return usage_error("--mtp decodes one session: not with --sessions");
    ds4bench::MultiOptions mo;
    mo.sessions = o.sessions;
    mo.position = o.ctx_start;
    mo.stride = o.stride;
    mo.gen_tokens = o.gen_tokens;
    mo.ctx = o.run.ctx;
    mo.prefill_chunk = o.run.prefill_chunk;
    mo.op_times = o.op_times;
    mo.spec_replay = o.spec_replay;
    mo.fail = run_error;
    FILE* out = open_csv(o.csv);
    if (out == nullptr) return usage_error("cannot write CSV file '" + o.csv + "'");
    const std::vector<ds4::TokenId> body(tokens.begin() + 1, tokens.end());  // without BOS
    return close_csv(
        out, o.csv,
        ds4bench::run_sessions(e, body, tok->special_ids().bos, tok->special_ids().eos, mo, out));
  }
  auto session = e.create_session({.n_ctx = o.run.ctx, .prefill_chunk = o.run.prefill_chunk});
  if (!session.is_ok()) return usage_error(session.status().message());
  std::optional<ds4::Result<std::unique_ptr<ds4::Session>>> mtp_session;
  if (!o.run.mtp.empty()) {
    mtp_session = e.create_session({.n_ctx = o.run.ctx, .prefill_chunk = o.run.prefill_chunk});
    if (!mtp_session->is_ok()) return usage_error(mtp_session->status().message());
  }

  FILE* csv = open_csv(o.csv);
  if (csv == nullptr) return usage_error("cannot write CSV file '" + o.csv + "'");
  std::fprintf(csv,
               "# model=%s backend=%s shape=%s ctx=%d state_bytes=%" PRIu64
               " bytes_per_token=%.1f prompt_tokens=%d gen_tokens=%d prefill_chunk=%d\n",
               o.run.model.c_str(), o.run.backend.c_str(), e.info().shape.c_str(), o.run.ctx,
               e.session_bytes(o.run.ctx), e.bytes_per_token(), text_tokens + 1, o.gen_tokens,
               o.run.prefill_chunk);
  std::fprintf(csv,
               "frontier,prefill_tokens,prefill_s,prefill_tps,gen_tokens,gen_s,gen_tps,kv_bytes,"
               "snapshot_s,restore_s\n");
  std::fflush(csv);
  std::fprintf(stderr,
               "ds4-bench: %s (%s, %s): prompt %d tokens%s, session ctx %d (%.1f MiB KV state)\n",
               o.run.model.c_str(), e.info().shape.c_str(), o.run.backend.c_str(), text_tokens + 1,
               text_tokens + 1 < o.ctx_max ? " (repeated up to --ctx-max)" : "", o.run.ctx,
               e.session_bytes(o.run.ctx) / 1048576.0);

  std::vector<Row> rows;
  const int rc =
      close_csv(csv, o.csv,
                run_sweep(e, **session, mtp_session ? mtp_session->value().get() : nullptr, tokens,
                          tok->special_ids().eos, o, csv, &rows));
  if (rc == 0) print_summary(rows);
  return rc;
}
