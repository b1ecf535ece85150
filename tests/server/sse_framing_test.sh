#!/usr/bin/env bash
# tests/server/sse_framing_test.sh DS4_SERVER MODEL: --help and a bad flag, then the raw bytes of
# a ds4-server stream, read with curl: status line, SSE and CORS headers, every event a `data: ` line ended by a blank line
# or a `:` comment (keepalive), the role chunk first, [DONE] last; keepalives keep coming while a
# request waits in the queue; OPTIONS answers 204; SIGINT exits 0.
set -euo pipefail
server=$1 model=$2
tmp=$(mktemp -d)
fail() { echo "FAIL: $*"; exit 1; }

# Flags: --help lists each with its default; a bad flag is one line on stderr and status 2.
"$server" --help >"$tmp/help" || fail "--help exit status"
for want in '--host TEXT=127.0.0.1' '=8000' '--tool-memory-max-ids' '=100000' \
    '--disable-exact-dsml-tool-replay' '--api-key' '--trace' '--prefill-chunk' '--cors' \
    '--parallel' '--batch-tokens' '--itl-target-ms'; do
  grep -qF -- "$want" "$tmp/help" || fail "--help lacks '$want'"
done
grep -q 'test-forced-output' "$tmp/help" && fail "the test hook is listed in --help"
status=0
"$server" --port nope 2>"$tmp/bad" >/dev/null || status=$?
[[ $status == 2 && $(wc -l <"$tmp/bad") == 1 ]] || fail "bad flag: status $status, $(cat "$tmp/bad")"
status=0
"$server" --itl-target-ms -5 2>"$tmp/bad" >/dev/null || status=$?
[[ $status == 2 ]] && grep -q -- '--itl-target-ms' "$tmp/bad" || fail "--itl-target-ms -5: status $status, $(cat "$tmp/bad")"

# One session, so the second long request below waits in the queue.
"$server" -m "$model" --port 0 -t 2 --ctx 8192 --cors --parallel 1 >"$tmp/out" 2>"$tmp/err" &
pid=$!
cleanup() { kill "$pid" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
# Startup is slow under sanitizers on a loaded machine: wait up to a minute.
for _ in $(seq 600); do grep -q listening "$tmp/out" && break; sleep 0.1; done
port=$(grep -o '127\.0\.0\.1:[0-9]*' "$tmp/out" | cut -d: -f2 || true)
[[ -n $port ]] || fail "server did not start: $(cat "$tmp/err")"
base=http://127.0.0.1:$port

body='{"model":"deepseek-chat","messages":[{"role":"user","content":"Hi"}],"max_tokens":6,"stream":true,"seed":1}'
curl -sS -N -D "$tmp/headers" -o "$tmp/body" "$base/v1/chat/completions" -d "$body"
grep -q '^HTTP/1.1 200' "$tmp/headers" || fail "status: $(head -1 "$tmp/headers")"
grep -qi '^content-type: text/event-stream' "$tmp/headers" || fail "content type"
grep -qi '^cache-control: no-cache' "$tmp/headers" || fail "cache-control"
grep -qi '^access-control-allow-origin: \*' "$tmp/headers" || fail "CORS header"
# Every line is "data: ...", ": comment" or empty, and events are separated by blank lines.
python3 - "$tmp/body" <<'PY' || exit 1
import json, sys
raw = open(sys.argv[1], "rb").read().decode()
assert raw.endswith("data: [DONE]\n\n"), repr(raw[-40:])
events = raw.split("\n\n")[:-1]
data = []
for ev in events:
    lines = ev.split("\n")
    assert len(lines) == 1, f"multi-line event {ev!r}"
    if lines[0].startswith(":"):
        continue
    assert lines[0].startswith("data: "), lines[0]
    data.append(lines[0][6:])
assert data[-1] == "[DONE]"
chunks = [json.loads(d) for d in data[:-1]]
assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
assert all(c["object"] == "chat.completion.chunk" for c in chunks)
assert len({c["id"] for c in chunks}) == 1
assert chunks[-1]["choices"][0]["finish_reason"] in ("length", "stop")
assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
PY

# `curl -d @file` sends application/x-www-form-urlencoded: a JSON body over 8 KiB is still read as
# JSON (a server that parsed form bodies itself would refuse one that large with 413). Its size is
# white space, so its prompt stays short (a long prompt takes minutes under ThreadSanitizer).
python3 -c 'import sys; open(sys.argv[1],"w").write("{\"model\":\"deepseek-chat\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]" + " " * 20000 + "}")' "$tmp/big.json"
code=$(curl -sS -o "$tmp/big.out" -w '%{http_code}' "$base/v1/chat/completions" -d @"$tmp/big.json")
[[ $code == 200 ]] || fail "a 20 KB form-typed JSON body: $code $(head -c 300 "$tmp/big.out")"

# HTTP/1.0 has no chunked encoding: the stream ends with the connection, its bytes unchanged.
curl -sS -N --http1.0 -D "$tmp/headers10" -o "$tmp/body10" "$base/v1/chat/completions" -d "$body"
grep -qi '^transfer-encoding' "$tmp/headers10" && fail "HTTP/1.0 stream: $(cat "$tmp/headers10")"
grep -qi '^connection: close' "$tmp/headers10" || fail "HTTP/1.0 stream without Connection: close"
python3 -c 'import sys; assert open(sys.argv[1], "rb").read().endswith(b"data: [DONE]\n\n")' \
  "$tmp/body10" || fail "HTTP/1.0 stream: $(tail -c 80 "$tmp/body10")"

# A request waiting behind a long one receives keepalive comments (the queue is FIFO).
long='{"model":"deepseek-chat","messages":[{"role":"user","content":"Hi"}],"max_tokens":8000,"stream":true}'
curl -sS -N -o "$tmp/first" --max-time 30 "$base/v1/chat/completions" -d "$long" &
first=$!
# Only once the first stream is decoding does the second one surely queue behind it (a fixed
# sleep lost this race on a loaded CI machine, and the second request ran first).
for _ in $(seq 300); do grep -q '"content":"[^"]' "$tmp/first" 2>/dev/null && break; sleep 0.1; done
grep -q '"content":"[^"]' "$tmp/first" || fail "the first long request produced no token in 30 s"
curl -sS -N -o "$tmp/waiting" --max-time 3 "$base/v1/chat/completions" -d "$long" 2>/dev/null || true
kill "$first" 2>/dev/null || true
wait "$first" 2>/dev/null || true
n=$(grep -c '^: keepalive' "$tmp/waiting" || true)
((n >= 2)) || fail "only $n keepalives in 3 s of waiting: $(head -c 300 "$tmp/waiting")"

code=$(curl -sS -o /dev/null -w '%{http_code}' -X OPTIONS "$base/v1/chat/completions")
[[ $code == 204 ]] || fail "OPTIONS gave $code"

kill -INT "$pid"
status=0
wait "$pid" || status=$?
[[ $status == 0 ]] || fail "exit status $status after SIGINT: $(cat "$tmp/err")"
echo "sse framing: ok"
