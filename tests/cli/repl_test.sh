#!/usr/bin/env bash
# tests/cli/repl_test.sh DS4 MODEL: drives the interactive REPL through a pseudo-terminal (tmux):
# a first turn stopped with Ctrl+C during generation, Ctrl+C at the prompt, /ctx, a second turn
# that re-evaluates the kept transcript, an unknown command, /power (set, refused, shown), /save,
# then /quit.
set -euo pipefail
ds4=$1 model=$2
command -v tmux >/dev/null || { echo "tmux missing (scripts/setup.sh installs it)"; exit 1; }
work=$(mktemp -d)
sock="$work/tmux.sock"
cleanup() { tmux -S "$sock" kill-server 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

t() { tmux -S "$sock" "$@"; }
screen() { t capture-pane -p -J -S -2000 -t repl; }
# wait_for PATTERN N: until PATTERN occurs at least N times on the screen (30 s at most).
wait_for() {
  for _ in $(seq 300); do
    if [[ $(screen | grep -c -- "$1" || true) -ge $2 ]]; then return 0; fi
    sleep 0.1
  done
  echo "FAIL: timed out waiting for '$1' x$2"; screen | tail -30; exit 1
}

HOME="$work" t new-session -d -s repl -x 160 -y 50 \
  "'$ds4' -m '$model' --temp 0 --nothink -n 100000 --ctx 4096 -t 1; echo \"EXIT=\$?\" > '$work/exit'; sleep 60"
wait_for '^ds4> ' 1
t send-keys -t repl 'Write a very long story' Enter
sleep 1.5                      # generating (thousands of tokens left)
t send-keys -t repl C-c
wait_for 'stop: interrupt' 1
wait_for '^ds4> ' 2
t send-keys -t repl C-c        # at the prompt: a fresh prompt, not an exit
wait_for '^ds4> ' 3
t send-keys -t repl '/ctx 1024' Enter
wait_for 'context 1024 tokens' 1
t send-keys -t repl 'And another one' Enter
wait_for 'stop: \(length\|eos\)' 1  # until the 1024-token context is nearly full, or the random model's EOS
t send-keys -t repl '/bogus' Enter
wait_for 'unknown command /bogus' 1
t send-keys -t repl '/power 35' Enter
wait_for 'power: 35%' 1
t send-keys -t repl '/power 0' Enter
wait_for 'usage: /power N' 1
t send-keys -t repl '/power' Enter
wait_for 'power: 35%' 2
t send-keys -t repl "/save $work/chat.dsv4" Enter
wait_for "saved $work/chat.dsv4" 1
t send-keys -t repl '/quit' Enter
for _ in $(seq 100); do [[ -f $work/exit ]] && break; sleep 0.1; done

fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
out=$(screen)
check "exited with status 0" "grep -q '^EXIT=0$' '$work/exit'"
# Turn 2 re-evaluates the transcript (turn 1's prompt + its interrupted reply + EOS + turn 2) in
# the new 1024-token session: more prompt tokens than turn 2's own text, all evaluated.
turn2=$(grep -E 'stop: (length|eos)' <<<"$out" | head -1)
p=$(sed -E 's/.*prompt ([0-9]+) tokens \(([0-9]+) evaluated\).*/\1 \2/' <<<"$turn2")
check "second turn re-prefilled the kept transcript ($p)" "(( ${p% *} > 40 && ${p% *} == ${p#* } ))"
check "snapshot written" "[[ -s '$work/chat.dsv4' ]]"
check "history saved" "grep -q 'Write' '$work/.ds4_history'"  # libedit escapes spaces
exit $fail
