#!/usr/bin/env bash
# tools/cuda/agent_bench.sh: bench/agent.md's figures on the Flash q2 file with the CUDA backend
# (GPU machine, repository root, .devdeps carried; verify_all.sh's `agent` step). Two ds4-agent
# processes in the plain mode (--non-interactive --yolo, -c "${CTX:-100000}" --nothink, -n 16 tokens per
# round), their times read from the --trace files (every line's "t"), then ds4-bench's prefill at
# the same frontier:
#   cold   no sysprompt.kv yet: the system prompt evaluated and checkpointed, then a short turn
#          (its first token), then PROMPT_TOKENS (default ~32k) of .devdeps/promessi_sposi.txt as
#          one message (the prefill rate from its progress events, what the UI's bar shows), and
#          /save of that session (its time and file size);
#   warm   a second process: the system prompt from sysprompt.kv (tokens evaluated: 0), a short
#          turn of a new session (its first token), /switch to the 32k session (time; tokens
#          evaluated: 0), then /strip and /switch again (the same transcript evaluated from text).
# Output: agent.csv and the traces under $OUT.
set -uo pipefail
out=${OUT:-/tmp}
source tools/cuda/common.sh
# LOCAL=1 (a check of this script off the GPU machine): BIN, MODEL and BACKEND as given, no build.
if [[ -z ${LOCAL:-} ]]; then
  ds4_build ds4-agent ds4-bench ds4-gguf > "$out/agent-build.log" 2>&1 ||
    { tail -30 "$out/agent-build.log"; exit 1; }
  ds4_flash_model > /dev/null
fi
bin=${BIN:-$PWD/build-dev/bin} model=${MODEL:-$DS4_FLASH} backend=${BACKEND:-cuda}
bytes=${PROMPT_BYTES:-118000}
kv=/dev/shm/agent-kv
rm -rf "$kv" /tmp/agent-work && mkdir -p /tmp/agent-work
head -c "$bytes" .devdeps/promessi_sposi.txt | tr '\n' ' ' > /tmp/agent-prompt.txt
# One agent reading a fifo; input goes in only when it waits (+DWARFSTAR_WAITING on stderr).
start() {  # start NAME
  rm -f /tmp/agent-in && mkfifo /tmp/agent-in
  (cd /tmp/agent-work && exec "$bin/ds4-agent" -m "$model" --backend "$backend" \
     -c "${CTX:-100000}" --nothink --non-interactive --yolo -n 16 --kv-dir "$kv" --trace "$out/agent-$1.jsonl" \
     < /tmp/agent-in > "$out/agent-$1.out" 2> "$out/agent-$1.err") &
  pid=$!
  exec 3> /tmp/agent-in
  err=$out/agent-$1.err
  waits=0
}
next() {  # waits until the agent is idle again, then sends $1
  waits=$((waits + 1))
  for _ in $(seq 3000); do
    (($(grep -c '^+DWARFSTAR_WAITING$' "$err") >= waits)) && break
    kill -0 "$pid" 2> /dev/null || { echo "the agent died: $(tail -3 "$err")"; return 1; }
    sleep 0.1
  done
  printf '%s\n' "$1" >&3
}
stop() { next "" && exec 3>&- && wait "$pid"; echo "exit $?"; tail -2 "$err"; }
echo "== cold"
start cold
next "hello"
next "$(cat /tmp/agent-prompt.txt)"
next "/save"
stop
grep -a '^saved' "$out/agent-cold.out"
id=$(grep -a '^saved session' "$out/agent-cold.out" | head -1 | cut -d' ' -f3)
stat -c '%s %n' "$kv"/*.kv | tee "$out/agent-files.txt"
echo "== warm"
start warm
next "hello"
next "/switch $id"
next "/strip $id"
next "/switch $id"
stop
grep -a '^switched\|^stripped' "$out/agent-warm.out"
echo "== ds4-bench at the same frontier"
tokens=$(grep -a '"what":"user"' "$out/agent-cold.jsonl" | sed -n 2p | sed 's/.*"tokens":\([0-9]*\).*/\1/')
tokens=$((tokens - 64))  # the plain text's tokens, without the turn's markers
"$bin/ds4-bench" -m "$model" --backend "$backend" --prompt-file /tmp/agent-prompt.txt \
  --ctx-start "$tokens" --ctx-max "$tokens" --step-incr 2048 --gen-tokens 4 --prefill-chunk 2048 \
  --csv "$out/agent-bench.csv" 2> "$out/agent-bench.err" || tail -5 "$out/agent-bench.err"
cat "$out/agent-bench.csv"
python3 tools/cuda/agent_report.py "$out" | tee "$out/agent.csv"
