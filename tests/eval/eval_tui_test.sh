#!/usr/bin/env bash
# ds4-eval's split screen in a real terminal (tmux) on the tiny model: the title, score, case list
# and live pane appear; p pauses (the screen, clock and token count included, stays still) and
# resumes; Down moves the selection and Enter runs that case next (the interrupted case is
# SWITCHED in the trace and runs again later); q quits mid-run and the report follows on the
# normal screen (the running case STOPPED, the rest PENDING), exit status 1.
set -u
EVAL=$1
MODEL=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ds4_eval_tui_XXXXXX")
sock="$tmp/tmux.sock"
t() { tmux -S "$sock" "$@"; }
trap 't kill-server 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; echo "--- screen:" >&2; t capture-pane -p -t ev >&2; exit 1; }
screen() { t capture-pane -p -t ev; }
# wait_for REGEX [SECONDS]: until the screen matches.
wait_for() {
  for _ in $(seq $((${2:-60} * 10))); do
    screen | grep -q -- "$1" && return 0
    sleep 0.1
  done
  fail "no '$1' on the screen"
}
t new-session -d -s ev -x 140 -y 30 \
  "$EVAL -m $MODEL --tokens 600 --temp 0 --seed 1 --nothink --questions 8 --pause-ms 0 \
   --trace $tmp/trace.txt; echo EXIT=\$?; sleep 600"
wait_for '^ds4-eval (p)ause (q)uit [0-9][0-9]:[0-9][0-9]'
wait_for 'live sampled tokens'
wait_for '^ *2 RUNNING ds4/int-02'
screen | grep -q '^score 1/8\|^score 0/8 failed 1' || fail "no score line"

# p: everything stands still until p again.
t send-keys -t ev p
wait_for 'PAUSED'
sleep 0.3
a=$(screen)
sleep 1.5
[ "$a" = "$(screen)" ] || fail "the screen moved while paused"
# Down x5 moves the selection from case 1 to case 6.
t send-keys -t ev Down Down Down Down Down
wait_for '^>  6 PENDING ds4/int-06'
t send-keys -t ev p
t send-keys -t ev Enter
wait_for '^>  6 RUNNING ds4/int-06' 30
t send-keys -t ev q
wait_for '^EXIT=1' 30
wait_for '^ds4-eval: [0-9]/8 passed'
screen | grep -q '^[0-9]  STOPPED ' || fail "the running case is not STOPPED"
screen | grep -q '^[0-9]  PENDING ' || fail "no PENDING case in the report"
grep -q '^status: SWITCHED' "$tmp/trace.txt" || fail "no SWITCHED case in the trace"
echo "ok"
