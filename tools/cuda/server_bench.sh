#!/usr/bin/env bash
# tools/cuda/server_bench.sh: the ds4-server figures of bench/server.md, on the GPU machine from
# the repository root (.devdeps carried: headers, the vocabulary, promessi_sposi.txt, the serving
# libraries in .devdeps/serve, and Claude Code's captured requests in .devdeps/claude). Needs
# build-dev/bin/ds4-server and the Flash q2 file (verify_all.sh builds and synthesizes both). Each
# scenario starts a fresh `ds4-server --backend cuda` and drives it with tools/cuda/server_drive.py
# (standard-library Python: no npm there); JSON lines and server logs go to $OUT (default /tmp).
#   chat     one short and one 2k-token streaming chat (256 tokens each): TTFT, tokens/s
#   toolrt   an OpenAI tool-call round trip (forced get_weather call, then a forced answer)
#   claude   Claude Code's first request and its tool-result turn (forced Read call), with a disk
#            KV cache; the server restarted and the first request sent again
#   kvc      cold prompts of 8k, 25k, 32k and 128k tokens with a disk KV cache; the server
#            restarted and each sent again (save / load times and file sizes from the server log)
set -uo pipefail
out=${OUT:-/tmp}
steps=${1:-chat,toolrt,claude,kvc}
has() { [[ ",$steps," == *",$1,"* ]]; }
source tools/cuda/common.sh
export LD_LIBRARY_PATH=$PWD/.devdeps/serve/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
port=18080 url=http://127.0.0.1:18080
drive() { python3 tools/cuda/server_drive.py "$@" | tee -a "$out/server_bench.jsonl"; }
pid=
# serve NAME ARGS...: a fresh server on the Flash file (log $out/server-NAME.log), once /health answers.
serve() {
  local name=$1
  shift
  build-dev/bin/ds4-server -m "$DS4_FLASH" --backend cuda --port $port "$@" \
    > "$out/server-$name.log" 2>&1 &
  pid=$!
  drive health "$url" "$pid" | sed "s/^/$name: /"
}
# stop: SIGTERM (the disk cache's shutdown saves happen here), then wait for the exit.
stop() { kill -TERM "$pid" && wait "$pid"; echo "server exit $?"; }
EOS="<｜end▁of▁sentence｜>"

if has chat; then
  serve chat --ctx 32768
  printf 'Explain what a hash table is, in two sentences.' > /tmp/p_short.txt
  drive chat "$url" /tmp/p_short.txt 256
  drive chat "$url" .devdeps/promessi_sposi.txt 256 6500
  stop
fi
if has toolrt; then
  call="</think>"$'\n\n'"<｜DSML｜tool_calls>"$'\n'"<｜DSML｜invoke name=\"get_weather\">"$'\n'
  call+="<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>"$'\n'
  call+="<｜DSML｜parameter name=\"days\" string=\"false\">3</｜DSML｜parameter>"$'\n'
  call+="</｜DSML｜invoke>"$'\n'"</｜DSML｜tool_calls>"
  serve toolrt --ctx 32768 --test-forced-output "$call" \
    --test-forced-output "</think>Sun, then rain, then sun.$EOS"
  drive toolrt "$url"
  stop
fi
if has claude && [[ -s .devdeps/claude/req1.json ]]; then
  rm -rf /dev/shm/kvc-claude
  read="</think>"$'\n\n'"<｜DSML｜tool_calls>"$'\n'"<｜DSML｜invoke name=\"Read\">"$'\n'
  read+="<｜DSML｜parameter name=\"file_path\" string=\"true\">$(cat .devdeps/claude/path.txt)"
  read+="</｜DSML｜parameter>"$'\n'"</｜DSML｜invoke>"$'\n'"</｜DSML｜tool_calls>"
  serve claude --ctx 65536 --kv-disk-dir /dev/shm/kvc-claude --test-forced-output "$read" \
    --test-forced-output "</think>The word is walnut.$EOS"
  drive anthropic "$url" .devdeps/claude/req1.json .devdeps/claude/req2.json
  stop
  # Without the forced answer the random model does not stop: 64 tokens (Claude Code asks 32,000).
  serve claude-restart --ctx 65536 --kv-disk-dir /dev/shm/kvc-claude
  MAX_TOKENS=64 drive anthropic "$url" .devdeps/claude/req1.json
  stop
  grep -h "kv cache" "$out"/server-claude*.log
fi
if has kvc; then
  rm -rf /dev/shm/kvc-big
  # Prompts from separate parts of the text (none a prefix of another): ~3.2 characters a token.
  offset=0
  for tokens in 8192 25000 32768 131072; do
    chars=$((tokens * 16 / 5))
    python3 - "$offset" "$chars" "/tmp/p_$tokens.txt" <<'EOF'
import sys
text = open(".devdeps/promessi_sposi.txt", encoding="utf-8").read()
start, n = int(sys.argv[1]), int(sys.argv[2])
open(sys.argv[3], "w", encoding="utf-8").write(text[start:start + n])
EOF
    offset=$((offset + chars))
  done
  for round in cold restart; do
    serve "kvc-$round" --ctx 160000 --kv-disk-dir /dev/shm/kvc-big
    for tokens in 8192 25000 32768 131072; do
      drive chat "$url" "/tmp/p_$tokens.txt" 1 | sed "s/^/$round $tokens: /"
    done
    stop
    ls -l /dev/shm/kvc-big
  done
  grep -h "kv cache" "$out"/server-kvc-*.log
fi
