#!/usr/bin/env bash
# tests/server/loadgen_test.sh DS4_LOADGEN DS4_SERVER MODEL PROMPT_FILE: ds4-loadgen against the
# real server on loopback. 3 clients x 2 streaming requests of at most 6 tokens: every request
# row is ok with 1..6 completion tokens and a positive time to first token, the summary's token
# total is the rows' sum, and its rates are consistent with it; the long-prompt scenario reports
# consistent rates and, with the server's prefill pacing, bounded gaps; 64 clients connecting at
# once are all served; a bad flag is status 2 and an unreachable server makes every request fail
# with status 1.
set -euo pipefail
loadgen=$1 server=$2 model=$3 prompt=$4
tmp=$(mktemp -d)
fail() { echo "FAIL: $*"; exit 1; }
status=0
"$loadgen" --clients 0 --prompt-file "$prompt" 2>"$tmp/bad" >/dev/null || status=$?
[[ $status == 2 ]] || fail "bad flag: status $status"

"$server" -m "$model" --port 0 -t 2 --ctx 4096 --max-queue 64 >"$tmp/out" 2>"$tmp/err" &
pid=$!
cleanup() { kill "$pid" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
for _ in $(seq 600); do grep -q listening "$tmp/out" && break; sleep 0.1; done
port=$(grep -o '127\.0\.0\.1:[0-9]*' "$tmp/out" | cut -d: -f2 || true)
[[ -n $port ]] || fail "server did not start: $(cat "$tmp/err")"

"$loadgen" --port "$port" -c 3 -r 2 -n 6 --prompt-file "$prompt" --prompt-chars 300 \
  --csv "$tmp/rows.csv" >"$tmp/summary.csv" || fail "loadgen status $?: $(cat "$tmp/summary.csv")"
python3 - "$tmp/rows.csv" "$tmp/summary.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
summary = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == 6, rows
assert sorted((int(r["client"]), int(r["request"])) for r in rows) == [(c, q) for c in range(3) for q in range(2)]
for r in rows:
    assert r["ok"] == "1", r
    assert 1 <= int(r["completion_tokens"]) <= 6, r
    assert float(r["ttft_ms"]) > 0 and float(r["total_s"]) * 1000 >= float(r["ttft_ms"]), r
    assert int(r["prompt_tokens"]) > 20, r
assert len(summary) == 1, summary
s = summary[0]
total = sum(int(r["completion_tokens"]) for r in rows)
assert int(s["completion_tokens"]) == total and int(s["failed"]) == 0, (s, total)
assert abs(float(s["aggregate_tokens_per_s"]) - total / float(s["wall_s"])) < 0.02 * total / float(s["wall_s"]) + 0.01, s
assert float(s["ttft_p99_ms"]) >= float(s["ttft_p50_ms"]) > 0, s
assert float(s["itl_p99_ms"]) >= float(s["itl_p50_ms"]) >= 0, s
print("loadgen rows and summary consistent:", s)
PY
# The long-prompt scenario: a ~2,200-token prompt alone, then beside 2 decoding clients. The
# server paces its prefill (--itl-target-ms, default 100 ms): the clients' gaps while it prefills
# stay a small part of its whole prefill time (unpaced, one 2,046-row chunk holds them for ~90% of
# it), and the two measured prefill rates and the decode-phase aggregate are reported. Left out
# in the sanitizer builds (DS4_LOADGEN_SKIP_LONG): its two ~2,200-token prefills were most of
# this test's 89 s under ASan; `make test` runs it.
if [[ ${DS4_LOADGEN_SKIP_LONG:-0} == 1 ]]; then
  echo "long-prompt scenario skipped (DS4_LOADGEN_SKIP_LONG: a sanitizer build)"
else
"$loadgen" --port "$port" -c 2 -n 60 --prompt-file "$prompt" --prompt-chars 300 \
  --long-prompt-chars 8000 --csv "$tmp/long.csv" >"$tmp/long.summary" 2>"$tmp/long.err" ||
  fail "long prompt: status $? $(cat "$tmp/long.err")"
python3 - "$tmp/long.csv" "$tmp/long.summary" <<'PY'
import csv, sys
rows = {r["role"]: r for r in csv.DictReader(open(sys.argv[1]))}
s = list(csv.DictReader(open(sys.argv[2])))[0]
alone, beside = rows["long-alone"], rows["long-beside"]
for r in (alone, beside):
    assert r["ok"] == "1" and int(r["prompt_tokens"]) > 1500, r
assert int(beside["cached_tokens"]) < 100, beside  # cut elsewhere: nothing of the first reused
tokens = int(beside["prompt_tokens"]) - int(beside["cached_tokens"])
assert int(s["long_prompt_tokens"]) == tokens, (s, beside)
rate_alone = int(alone["prompt_tokens"]) / (float(alone["ttft_ms"]) / 1e3)
rate_beside = tokens / (float(beside["ttft_ms"]) / 1e3)
assert abs(float(s["long_alone_prefill_tokens_per_s"]) - rate_alone) < 0.01 * rate_alone + 0.01, s
assert abs(float(s["long_beside_prefill_tokens_per_s"]) - rate_beside) < 0.01 * rate_beside + 0.01, s
assert abs(float(s["long_prefill_ratio"]) - rate_beside / rate_alone) < 0.01, s
assert s["long_decoders_beside"] == "2", s  # 60 tokens outlast a paced prefill of ~35 steps
p50, p99 = float(s["itl_during_long_p50_ms"]), float(s["itl_during_long_p99_ms"])
assert 0 < p50 <= p99 < 0.4 * float(alone["ttft_ms"]), (s, alone["ttft_ms"])
assert 0 < float(s["decode_phase_s"]) <= float(s["wall_s"]), s
assert float(s["decode_aggregate_tokens_per_s"]) > 0, s
print("long prompt beside 2 clients: gaps p99 %.0f ms over a %.0f ms prefill alone, ratio %s" %
      (p99, float(alone["ttft_ms"]), s["long_prefill_ratio"]))
PY
fi
# A burst: 64 clients connect at once (queued: --max-queue 64; far more than
# httplib's own listen backlog of 5, which made 46 of them fail with "transport: Read"): every
# request is served, the ones past the threads after a wait.
"$loadgen" --port "$port" -c 64 -n 1 --prompt-file "$prompt" --prompt-chars 120 \
  --csv "$tmp/burst.csv" >"$tmp/burst.summary" 2>"$tmp/burst.err" ||
  fail "burst: status $? $(head -3 "$tmp/burst.err")"
python3 - "$tmp/burst.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 64, len(rows)
bad = [r for r in rows if r["ok"] != "1"]
assert not bad, bad[:3]
print("burst of 64 clients: every request served")
PY
kill "$pid"
wait "$pid" || true
status=0
"$loadgen" --port "$port" -c 2 -r 1 -n 4 --prompt-file "$prompt" >"$tmp/down.csv" 2>"$tmp/down.err" || status=$?
[[ $status == 1 ]] || fail "server down: status $status"
grep -q "transport" "$tmp/down.err" || fail "server down: $(cat "$tmp/down.err")"
echo "ok"
