#!/usr/bin/env bash
# tests/server/mapping_guard_test.sh DS4_SERVER MODEL: a model file truncated under a running
# ds4-server (the CPU backend reads its mapped weights) ends the process with status 70 and one
# clear line on stderr, not a silent SIGBUS. Runs on a copy of the model.
set -euo pipefail
server=$1 model=$2
tmp=$(mktemp -d)
fail() { echo "FAIL: $*"; exit 1; }
cp "$model" "$tmp/model.gguf"
"$server" -m "$tmp/model.gguf" --port 0 -t 2 --ctx 1024 >"$tmp/out" 2>"$tmp/err" &
pid=$!
cleanup() { kill "$pid" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
for _ in $(seq 600); do grep -q listening "$tmp/out" && break; sleep 0.1; done
port=$(grep -o '127\.0\.0\.1:[0-9]*' "$tmp/out" | cut -d: -f2 || true)
[[ -n $port ]] || fail "server did not start: $(cat "$tmp/err")"
# Keep the header, drop every weight: the next evaluation reads pages that no longer exist.
truncate -s 4096 "$tmp/model.gguf"
curl -sS -o /dev/null --max-time 30 "http://127.0.0.1:$port/v1/chat/completions" \
  -d '{"model":"deepseek-chat","messages":[{"role":"user","content":"Hi"}],"max_tokens":4}' || true
status=0
for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "the server still runs on a truncated model"
wait "$pid" || status=$?
[[ $status == 70 ]] || fail "exit status $status (want 70): $(tail -3 "$tmp/err")"
grep -q '^ds4: fatal: SIGBUS reading a memory-mapped file' "$tmp/err" ||
  fail "no clear line: $(tail -3 "$tmp/err")"
echo "mapping guard: exit 70 with one line"
