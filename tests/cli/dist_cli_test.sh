#!/usr/bin/env bash
# tests/cli/dist_cli_test.sh DS4 DS4_SERVER DS4_BENCH MODEL: distributed inference as users run it (features.md §10,
# issue 49): real processes on loopback -- `ds4 --role coordinator` holding layer 0 and two
# `ds4 --role worker` processes -- against one process on the same model:
#   - the distributed flags' usage errors: one line, exit 2;
#   - a one-shot greedy run and --dump-logits give the same bytes as one process;
#   - an interactive session (the REPL on a pipe) whose last worker is killed with SIGKILL and
#     started again between two turns: the session is replayed to the new worker and the second
#     answer is the one process's;
#   - ds4-server as the coordinator: two requests at once (one batched step of both) answer what
#     a one-process server answers;
#   - Ctrl+C during a distributed generation (the REPL in a terminal, tmux) drains the token in
#     flight: the reply stops, and the next turn runs on the same workers without a replay;
#   - ds4-bench as the coordinator: a sweep with its snapshot save and restore;
#   - a route that stays incomplete fails the request after --dist-route-wait, naming the missing
#     layer, and never hangs.
set -euo pipefail
ds4=$1 server=$2 bench=$3 model=$4
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  exec 9>&- 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
common=(-m "$model" -c 256 -t 1 --nothink --temp 0)
# wait_for FILE PATTERN: until PATTERN is in FILE (30 s at most).
wait_for() {
  for _ in $(seq 300); do
    if grep -q -- "$2" "$1" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "FAIL: timed out waiting for '$2' in $1"; cat "$1"; exit 1
}
worker() {  # worker NAME LAYERS PORT [ARGS...]: starts a worker in the background
  "$ds4" -m "$model" -c 256 -t 1 --role worker --layers "$2" --coordinator "127.0.0.1:$3" "${@:4}" \
    2>"$work/$1.err" 9>&- &  # not holding the REPL's pipe open
  pids+=($!)
  eval "$1=$!"
}
port_of() {  # the control port a coordinator printed on stderr
  wait_for "$1" 'workers register at'
  sed -nE 's/.*workers register at tcp:\/\/[^ ]*:([0-9]+).*/\1/p' "$1" | head -1
}

# Usage errors.
usage() {
  local out code=0
  out=$("$ds4" -m "$model" "$@" 2>&1 >/dev/null) || code=$?
  check "usage error exit 2, one line: $* -> $out" "(( code == 2 )) && [[ \$(wc -l <<<\"\$out\") == 1 ]]"
}
usage --layers 1:2
usage --role worker --layers 0:1 --coordinator 127.0.0.1:5000
usage --role worker --layers 2:1 --coordinator 127.0.0.1:5000
usage --role worker --layers 1-2 --coordinator 127.0.0.1:5000
usage --role worker --layers 1:2
usage --role coordinator --layers 0:1
usage --role coordinator --layers 0:output --listen 127.0.0.1:5000
usage --role coordinator --layers 0:1 --listen 0.0.0.0:5000
usage --role coordinator --layers 0:1 --listen 127.0.0.1:5000 --coordinator 127.0.0.1:5001
usage --role worker --layers 1:output --coordinator 127.0.0.1:5000 -p hi
usage --dist-key /nonexistent.key

# One shot: the same tokens and the same logits as one process.
"$ds4" "${common[@]}" -p 'Tell me a story' -n 12 >"$work/one.out" 2>/dev/null
"$ds4" "${common[@]}" -p 'Tell me a story' --dump-logits "$work/one.json" 2>/dev/null
"$ds4" "${common[@]}" --role coordinator --layers 0:0 --listen 127.0.0.1:0 \
  -p 'Tell me a story' -n 12 >"$work/c1.out" 2>"$work/c1.err" &
c1=$!
pids+=($c1)
port=$(port_of "$work/c1.err")
worker w1 1:2 "$port"
worker w2 3:output "$port"
wait "$c1" || { echo "FAIL: coordinator exit"; cat "$work/c1.err"; exit 1; }
check "one-shot output equals one process's" "cmp -s '$work/one.out' '$work/c1.out'"
check "the route was reported" "grep -q 'route 1:2@tcp://127.0.0.1:[0-9]*, 3:output@' '$work/c1.err'"
# The workers stay up: they register with the next coordinator on the same port.
"$ds4" "${common[@]}" --role coordinator --layers 0:0 --listen "127.0.0.1:$port" \
  -p 'Tell me a story' --dump-logits "$work/dist.json" 2>"$work/c2.err"
check "--dump-logits equals one process's" "cmp -s '$work/one.json' '$work/dist.json'"

# The REPL over a pipe; the last worker killed and started again between two turns.
printf 'Tell me a story\nAnd another one\n' |
  "$ds4" "${common[@]}" -n 8 >"$work/repl_one.out" 2>/dev/null
mkfifo "$work/in"
"$ds4" "${common[@]}" -n 8 --role coordinator --layers 0:0 --listen "127.0.0.1:$port" \
  <"$work/in" >"$work/repl.out" 2>"$work/repl.err" &
c3=$!
pids+=($c3)
exec 9>"$work/in"
echo 'Tell me a story' >&9
wait_for "$work/repl.err" 'generated 8 tokens'
{ kill -9 "$w2" && wait "$w2"; } 2>/dev/null || true
worker w2 3:output "$port"
wait_for "$work/w2.err" 'registered with the coordinator'
echo 'And another one' >&9
exec 9>&-
wait "$c3" || { echo "FAIL: REPL coordinator exit"; cat "$work/repl.err"; exit 1; }
check "the answers after a worker restart equal one process's" \
  "cmp -s '$work/repl_one.out' '$work/repl.out'"
# The second turn was evaluated again from position 0 (the replay): every prompt token evaluated.
turn2=$(grep 'generated 8 tokens' "$work/repl.err" | sed -n 2p)
check "the second turn replayed the transcript ($turn2)" \
  "[[ '$turn2' =~ prompt\ ([0-9]+)\ tokens\ \(([0-9]+)\ evaluated\) ]] && (( BASH_REMATCH[1] == BASH_REMATCH[2] ))"

# ds4-server as the coordinator, two requests at once, against a one-process server.
ask() {  # ask PORT WHAT OUT: a greedy chat completion without thinking
  curl -s "127.0.0.1:$1/v1/chat/completions" -H 'content-type: application/json' -d \
    '{"model":"deepseek-chat","messages":[{"role":"user","content":"Tell me '"$2"'"}],"max_tokens":10,"temperature":0}' \
    | sed -E 's/"(id|created)":[^,]*,//g' >"$3"
}
serve() {  # serve NAME ARGS...: a server on a free port; sets NAME to its port
  local name=$1
  shift
  "$server" -m "$model" -c 256 -t 1 --port 0 --parallel 2 "$@" >"$work/$name.err" 2>&1 9>&- &
  pids+=($!)
  wait_for "$work/$name.err" 'listening on'
  eval "$name=\$(sed -nE 's/.*listening on http:\/\/127\.0\.0\.1:([0-9]+).*/\1/p' '$work/$name.err')"
}
serve solo
ask "$solo" story "$work/solo1.json"
ask "$solo" 'a poem' "$work/solo2.json"
serve duo --role coordinator --layers 0:0 --listen "127.0.0.1:$port"
duo_pid=${pids[-1]}
ask "$duo" story "$work/duo1.json" &
ask "$duo" 'a poem' "$work/duo2.json"
wait %%
check "the server's answers equal a one-process server's" \
  "cmp -s '$work/solo1.json' '$work/duo1.json' && cmp -s '$work/solo2.json' '$work/duo2.json'"
grep -q '"content":"[^"]' "$work/duo1.json" || { echo "FAIL: no answer"; cat "$work/duo1.json"; fail=1; }
kill "$duo_pid"  # frees the control port for the next coordinator
wait "$duo_pid" 2>/dev/null || true

# The server's disk KV cache over the route: a checkpoint saved at shutdown (gathered from the
# workers into one file) is restored by the next coordinator (split over the workers again) and
# the answer is the one-process server's.
long='a long story about a lighthouse keeper who finds a map in a bottle on a stormy night and sails to an island where nobody has been for a hundred years'
kv=(--prefill-chunk 64 --kv-cache-min-tokens 32 --kv-cache-boundary-align-tokens 16
    --kv-cache-boundary-trim-tokens 4)
restart() {  # restart NAME ARGS...: a server asked the long prompt, then stopped (a checkpoint)
  local name=$1
  shift
  serve "$name" "$@"
  local pid=${pids[-1]}
  ask "${!name}" "$long" "$work/$name.json"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}
restart solo_fresh --kv-disk-dir "$work/kv_solo" "${kv[@]}"
restart solo_restored --kv-disk-dir "$work/kv_solo" "${kv[@]}"
restart kv1 --role coordinator --layers 0:0 --listen "127.0.0.1:$port" --kv-disk-dir "$work/kv" \
  "${kv[@]}"
check "a checkpoint was written at shutdown" "ls '$work/kv/'*.kv >/dev/null 2>&1"
restart kv2 --role coordinator --layers 0:0 --listen "127.0.0.1:$port" --kv-disk-dir "$work/kv" \
  "${kv[@]}"
check "the restarted coordinator restored the prefix from disk" "grep -qE 'cached=[1-9]' '$work/kv2.err'"
check "the answers equal the one-process server's, fresh and restored" \
  "cmp -s '$work/solo_fresh.json' '$work/kv1.json' && cmp -s '$work/solo_restored.json' '$work/kv2.json'"

# Ctrl+C in a terminal: the token in flight drains, the session stays whole.
if command -v tmux >/dev/null; then
  sock="$work/tmux.sock"
  t() { tmux -S "$sock" "$@"; }
  screen() { t capture-pane -p -J -S -2000 -t repl; }
  await() {  # await PATTERN N: until PATTERN shows N times (30 s at most)
    for _ in $(seq 300); do
      [[ $(screen | grep -c -- "$1" || true) -ge $2 ]] && return 0
      sleep 0.1
    done
    echo "FAIL: timed out waiting for '$1'"; screen | tail -20; fail=1; return 1
  }
  HOME="$work" t new-session -d -s repl -x 160 -y 50 \
    "'$ds4' -m '$model' -c 256 -t 1 --nothink --temp 0 -n 100000 --role coordinator \
     --layers 0:0 --listen 127.0.0.1:$port 9>&-; sleep 60"
  if await '^ds4> ' 1; then
    t send-keys -t repl 'Write a very long story' Enter
    sleep 1
    t send-keys -t repl C-c
    await 'stop: interrupt' 1 && await '^ds4> ' 2
    t send-keys -t repl 'And another one' Enter
    await 'stop: \(length\|eos\)' 1
    turn2=$(screen | grep -E 'stop: (length|eos)' | head -1)
    check "after Ctrl+C the next turn reuses the workers' state, no replay ($turn2)" \
      "[[ '$turn2' =~ prompt\ ([0-9]+)\ tokens\ \(([0-9]+)\ evaluated\) ]] && (( BASH_REMATCH[2] < BASH_REMATCH[1] ))"
    check "no distributed error on the screen" "! screen | grep -qi 'mismatch\|lost\|no answer'"
    t send-keys -t repl '/quit' Enter
  fi
  t kill-server 2>/dev/null || true
fi

# ds4-bench as the coordinator: two frontiers, each with a snapshot saved and restored.
head -c 2000 /dev/zero | tr '\0' 'a' | sed 's/aaaa/word /g' >"$work/prompt.txt"
code=0
"$bench" -m "$model" -t 1 --prompt-file "$work/prompt.txt" --ctx-start 64 --ctx-max 128 \
  --gen-tokens 4 --role coordinator --layers 0:0 --listen "127.0.0.1:$port" \
  >"$work/bench.csv" 2>"$work/bench.err" || code=$?
check "ds4-bench over the route: exit 0, two frontiers with save and restore times" \
  "(( code == 0 )) && [[ \$(grep -c '^[0-9]' '$work/bench.csv') == 2 ]] && grep -q 'restore' '$work/bench.err'"

# CURVE: a cluster key lets the coordinator listen on every interface; its workers hold the key.
check "--dist-keygen writes a key of mode 600" \
  "'$ds4' --dist-keygen '$work/cluster.key' 2>/dev/null && [[ \$(stat -c %a '$work/cluster.key') == 600 ]]"
check "--dist-keygen never overwrites" "! '$ds4' --dist-keygen '$work/cluster.key' 2>/dev/null"
cp "$work/cluster.key" "$work/open.key"
chmod 644 "$work/open.key"
out=$("$ds4" -m "$model" --role worker --layers 1:output --coordinator 127.0.0.1:1 \
  --dist-key "$work/open.key" 2>&1) || true
check "a key file others may read is refused ($out)" "[[ '$out' == *'chmod 600'* ]]"
"$ds4" "${common[@]}" --role coordinator --layers 0:0 --listen 0.0.0.0:0 \
  --dist-key "$work/cluster.key" -p 'Tell me a story' -n 12 >"$work/k.out" 2>"$work/k.err" &
ck=$!
pids+=($ck)
kport=$(port_of "$work/k.err")
worker kw1 1:2 "$kport" --dist-key "$work/cluster.key"
worker kw2 3:output "$kport" --dist-key "$work/cluster.key"
wait "$ck" || { echo "FAIL: keyed coordinator exit"; cat "$work/k.err"; exit 1; }
check "with CURVE, the output equals one process's" "cmp -s '$work/one.out' '$work/k.out'"
{ kill "$kw1" "$kw2" && wait "$kw1" "$kw2"; } 2>/dev/null || true

# An incomplete route: the request fails after the wait, naming the missing layer.
{ kill -9 "$w2" && wait "$w2"; } 2>/dev/null || true
start=$SECONDS
code=0
"$ds4" "${common[@]}" --role coordinator --layers 0:0 --listen "127.0.0.1:$port" \
  --dist-route-wait 1 -p 'Tell me a story' -n 4 >/dev/null 2>"$work/c4.err" || code=$?
check "an incomplete route fails with exit 1 (got $code)" "(( code == 1 ))"
check "naming the missing layer" "grep -q 'distributed route incomplete: missing layer 3' '$work/c4.err'"
check "within seconds, no hang" "(( SECONDS - start < 20 ))"
exit $fail
