#!/usr/bin/env bash
# tests/server/big_prompt_test.sh DS4_SERVER MODEL: a 60 MB prompt (under the 64 MiB --max-body)
# is refused with 400 context_length_exceeded on every endpoint, quickly and with the server's
# peak memory (VmHWM) growing by less than kMaxGrowthMb: its bytes alone prove it too long, so it
# is not tokenized whole; the server then answers a normal request.
set -euo pipefail
server=$1 model=$2
max_growth_mb=300  # the issue's bound: body, JSON tree, request and rendered text, each ~60 MB
tmp=$(mktemp -d)
fail() { echo "FAIL: $*"; exit 1; }
"$server" -m "$model" --port 0 -t 2 --ctx 32768 >"$tmp/out" 2>"$tmp/err" &
pid=$!
cleanup() { kill "$pid" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
for _ in $(seq 600); do grep -q listening "$tmp/out" && break; sleep 0.1; done
port=$(grep -o '127\.0\.0\.1:[0-9]*' "$tmp/out" | cut -d: -f2 || true)
[[ -n $port ]] || fail "server did not start: $(cat "$tmp/err")"
python3 - "$tmp" <<'PY'
import json, sys
text = "lorem ipsum dolor sit amet " * (60 * 1024 * 1024 // 27)
d = sys.argv[1]
json.dump({"model": "deepseek-chat", "max_tokens": 1,
           "messages": [{"role": "user", "content": text}]}, open(d + "/chat.json", "w"))
json.dump({"model": "deepseek-chat", "max_tokens": 1, "prompt": text}, open(d + "/completions.json", "w"))
json.dump({"model": "deepseek-chat", "input": text}, open(d + "/responses.json", "w"))
PY
hwm() { awk '/VmHWM/ {print $2}' "/proc/$pid/status"; }
worst=0
for ep in chat/completions messages completions responses; do
  # Each request's own peak: writing 5 to clear_refs resets the high-water mark to the current
  # resident size (memory an earlier request freed may stay resident, reused by the next).
  echo 5 >"/proc/$pid/clear_refs"
  before=$(hwm)
  body=$tmp/chat.json
  [[ $ep == completions ]] && body=$tmp/completions.json
  [[ $ep == responses ]] && body=$tmp/responses.json
  start=$SECONDS
  code=$(curl -sS -o "$tmp/resp" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary @"$body" "http://127.0.0.1:$port/v1/$ep")
  [[ $code == 400 ]] || fail "$ep: status $code: $(head -c 300 "$tmp/resp")"
  grep -q 'at least' "$tmp/resp" || fail "$ep: $(head -c 300 "$tmp/resp")"
  ((SECONDS - start <= 20)) || fail "$ep: refused after $((SECONDS - start)) s"
  growth_mb=$((($(hwm) - before) / 1024))
  ((growth_mb < max_growth_mb)) || fail "$ep: peak memory grew by $growth_mb MB (limit $max_growth_mb)"
  ((growth_mb > worst)) && worst=$growth_mb
done
code=$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/chat/completions" \
  -d '{"model":"deepseek-chat","messages":[{"role":"user","content":"Hi"}],"max_tokens":2}')
[[ $code == 200 ]] || fail "a normal request after them: $code"
echo "60 MB prompts refused on four endpoints; peak memory grew by $worst MB at most"
