#!/usr/bin/env bash
# ds4-eval end to end on the tiny random model (CPU): the extractor self-test; a greedy run of four
# cases of each answer kind with its report, trace and exit status (a random model fails them:
# 1); the trace regraded to the same results, and a damaged trace counted as a parse error; the
# drift gate against the committed baseline (no drift), and a doctored baseline naming the case
# and its token delta; --mtp drafting leaves the run as it is; the think budget's hard close;
# --case-sequence's order; usage errors (exit 2, one line, the bad file's line number). With
# ds4-server ($5): the same cases asked through its chat API render the same prompts and give the
# same answers (no drift from the in-process baseline).
set -u
EVAL=$1
MODEL=$2
MTP=$3
BASELINE=$4
SERVER=${5:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ds4_eval_test_XXXXXX")
server_pid=
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
run() { timeout 120 "$EVAL" -m "$MODEL" --plain --tokens 32 --temp 0 --seed 1 --nothink "$@"; }
cases=(--case-sequence 1,15,29,41)  # integer, choice, line set, line set (safe code)

# --- the extractors' self-test ---
out=$("$EVAL" --self-test-extractors) || fail "self-test exit $?"
[ "$out" = "answer extractor self-tests passed" ] || fail "self-test said: $out"

# --- a run: streamed cases, the report, the trace; failures exit 1 ---
run "${cases[@]}" --trace "$tmp/trace.txt" --write-baseline "$tmp/base.tsv" > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 1 ] || { cat "$tmp/err"; fail "a run with failed cases must exit 1, not $rc"; }
grep -q '^\[1/4\] ds4/' "$tmp/out" || fail "no case header: $(head -3 "$tmp/out")"
grep -q '^ds4-eval: [0-9]/4 passed' "$tmp/out" || fail "no report line"
grep -q '^#  state   prompt  gen  total  given  correct  test' "$tmp/out" || fail "no report table"
[ "$(grep -c '^===== CASE ' "$tmp/trace.txt")" -eq 4 ] || fail "the trace holds 4 cases"
grep -q '^MODEL_OUTPUT_BEGIN bytes=[0-9]*' "$tmp/trace.txt" || fail "no counted output block"
grep -q '^===== SUMMARY =====' "$tmp/trace.txt" || fail "no summary"

# --- regrading: the same results; a damaged trace is a parse error (exit non-zero) ---
"$EVAL" --regrade-trace "$tmp/trace.txt" > "$tmp/regrade" || fail "regrade exit $?"
grep -q 'regraded 4 cases: .*changed 0, unknown 0, parse_errors 0' "$tmp/regrade" ||
  fail "regrade: $(cat "$tmp/regrade")"
sed 's/^MODEL_OUTPUT_BEGIN bytes=\([0-9]*\)/MODEL_OUTPUT_BEGIN bytes=9\1/' "$tmp/trace.txt" > "$tmp/bad.txt"
"$EVAL" --regrade-trace "$tmp/bad.txt" > "$tmp/regrade" && fail "a damaged trace regrades cleanly"
grep -q 'parse_errors [1-9]' "$tmp/regrade" || fail "no parse error counted: $(cat "$tmp/regrade")"

# --- the drift gate: the committed baseline, then a doctored one ---
run "${cases[@]}" --baseline "$BASELINE" > "$tmp/out" 2>&1 ||
  fail "drift from the committed baseline: $(tail -6 "$tmp/out")"
grep -q 'no drift' "$tmp/out" || fail "no verdict: $(tail -3 "$tmp/out")"
cmp -s "$BASELINE" "$tmp/base.tsv" || fail "--write-baseline differs from the committed baseline"
awk -F'\t' 'BEGIN { OFS = "\t" } $1 == "ds4/mc-01" { $4 = $4 + 5 } { print }' "$BASELINE" > "$tmp/doctored.tsv"
run "${cases[@]}" --baseline "$tmp/doctored.tsv" > "$tmp/out" 2>&1 && fail "a drift exits 0"
grep -q 'ds4/mc-01: tokens 37 -> 32 (-5)' "$tmp/out" || fail "the drift is not named: $(tail -4 "$tmp/out")"

# --- --mtp drafting changes nothing of a greedy run ---
run "${cases[@]}" --baseline "$BASELINE" --mtp "$MTP" --mtp-draft 2 --mtp-margin 0 > "$tmp/out" 2>&1 ||
  fail "--mtp drifted: $(tail -6 "$tmp/out")"

# --- the think budget: with 40 tokens left </think> is forced (hard close) ---
timeout 120 "$EVAL" -m "$MODEL" --plain --tokens 64 --temp 0 --seed 1 --think --case-sequence 2 \
  --hard-limit-reply-budget 40 --soft-limit-reply-budget 40 --soft-limit-think-close-rank 0 \
  --trace "$tmp/think.txt" > /dev/null 2>&1
grep -q '^think_close: hard index=24 remaining=40 ' "$tmp/think.txt" ||
  fail "no hard close: $(grep think_close "$tmp/think.txt")"

# --- --case-sequence runs exactly those cases, in that order ---
run --case-sequence 3,1 > "$tmp/out" 2>&1
[ "$(grep -o '^[0-9]  [A-Z]*  .*ds4/int-0[0-9]' "$tmp/out" | awk '{print $NF}' | tr '\n' ' ')" = "ds4/int-03 ds4/int-01 " ] ||
  fail "order: $(tail -3 "$tmp/out")"

# --- a dataset in its own format (GPQA's CSV, written here) ---
printf 'Record ID,Question,Correct Answer,Incorrect Answer 1,Incorrect Answer 2,Incorrect Answer 3\nr1,"Which is larger, 3 or 5?",5,3,4,2\n' > "$tmp/gpqa.csv"
run --questions-file "$tmp/gpqa.csv" --questions-format gpqa > "$tmp/out" 2>&1
grep -q '^\[1/1\] gpqa/' "$tmp/out" && grep -q 'gpqa/r1$' "$tmp/out" || fail "gpqa run: $(tail -4 "$tmp/out")"

# --- usage errors: exit 2, one line ---
usage() {  # usage NEEDLE ARGS...
  local needle=$1
  shift
  "$EVAL" -m "$MODEL" "$@" > /dev/null 2> "$tmp/err"
  [ $? -eq 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q -- "$needle" "$tmp/err" ||
    fail "usage error for $*: $(cat "$tmp/err")"
}
usage "the set has 41" --questions 1000
usage "not a case number" --case-sequence 0
usage "named twice" --case-sequence 2,2
usage "hard-limit-reply-budget 512 must be below --tokens 100" --think --tokens 100
printf '{"source":"t","id":"a","domain":"d","title":"t","question":"q","kind":"integer","answer":"1"}\nnot json\n' > "$tmp/bad.jsonl"
usage "line 2" --questions-file "$tmp/bad.jsonl"
usage "needs --questions-file" --questions-format aime
usage "unknown question format 'mmlu'" --questions-format mmlu --questions-file "$tmp/bad.jsonl"
# --- through ds4-server's API: the same prompts, the same greedy answers ---
if [ -n "$SERVER" ]; then
  "$SERVER" -m "$MODEL" --port 0 -t 2 --ctx 1024 > "$tmp/server.out" 2> "$tmp/server.err" &
  server_pid=$!
  for _ in $(seq 300); do grep -q 'listening on' "$tmp/server.out" && break; sleep 0.1; done
  url=$(grep -o 'http://127.0.0.1:[0-9]*' "$tmp/server.out" | head -1)
  [ -n "$url" ] || fail "ds4-server did not start: $(cat "$tmp/server.err")"
  timeout 120 "$EVAL" --server "$url" --plain --tokens 32 --temp 0 --seed 1 --nothink "${cases[@]}" \
    --baseline "$BASELINE" > "$tmp/out" 2>&1 || fail "--server drifted: $(tail -8 "$tmp/out")"
  run "${cases[@]}" > "$tmp/local" 2>&1
  [ "$(grep -A4 '^#  state' "$tmp/out")" = "$(grep -A4 '^#  state' "$tmp/local")" ] ||
    fail "the server's report differs: $(grep -A4 '^#  state' "$tmp/out")"
  "$EVAL" --server "http://127.0.0.1:1" --case-sequence 1 --nothink > /dev/null 2> "$tmp/err"
  [ $? -eq 1 ] && grep -q 'the server at 127.0.0.1:1' "$tmp/err" || fail "no server: $(cat "$tmp/err")"
  usage "give http://HOST:PORT" --server ftp://x
  kill "$server_pid"
  wait "$server_pid" 2>/dev/null
  server_pid=
fi

echo "ok"
