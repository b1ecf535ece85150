#!/usr/bin/env bash
# ds4-agent's terminal UI in a real terminal (tmux, 120x40) on the tiny random model (CPU):
# the banner, a scripted turn streamed into the scroll region above the footer, /save, /list,
# /new, /switch (zero tokens evaluated, from the trace), /strip and a rebuilt /switch, /history,
# Tab completion of a session id, an unknown command (the line comes back), Ctrl+C in the middle
# of a prefill (a long pasted prompt) and of a generation (the footer says so and the next turn
# runs), input queued while busy, and /quit with its save question.
set -u
AGENT=$1
MODEL=$2
command -v tmux > /dev/null || { echo "tmux missing: skipped"; exit 0; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ds4_agent_tui_XXXXXX")
sock="$tmp/tmux.sock"
T() { tmux -S "$sock" "$@"; }
cleanup() { T kill-server 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  echo "--- screen ---" >&2
  T capture-pane -p -t ui >&2 2>/dev/null
  exit 1
}
screen() { T capture-pane -p -t ui; }
# Waits (up to $3 s, default 60) until the screen matches $1 (grep -E).
await() {
  local n=$(( ${2:-60} * 10 ))
  for _ in $(seq "$n"); do
    screen | grep -Eq -- "$1" && return 0
    sleep 0.1
  done
  fail "the screen never showed /$1/"
}
# Waits until the trace holds $2 lines matching $1.
await_trace() {
  for _ in $(seq 600); do
    [ "$(grep -c -- "$1" "$tmp/trace.jsonl" 2>/dev/null)" -ge "$2" ] && return 0
    sleep 0.1
  done
  fail "the trace never held $2 of '$1'"
}
keys() { T send-keys -t ui "$@"; }
line() { T send-keys -t ui -l "$1"; T send-keys -t ui Enter; }
footer() { screen | tail -2 | head -1; }

mkdir -p "$tmp/work" "$tmp/home"
long=$(for i in $(seq 300); do printf 'word%d ' "$i"; done)
story=$(for i in $(seq 3000); do printf 'step%d ' "$i"; done)
printf '["Hello from the scripted model.", "%s", "After the interrupt.", "%s", "After the cancelled compaction."]' \
  "$story" "$story" > "$tmp/script.json"
T -f /dev/null new-session -d -s ui -x 120 -y 40 \
  "cd $tmp/work && HOME=$tmp/home TERM=xterm-256color $AGENT -m $MODEL -c 8192 --nothink --seed 1 -n 3000 \
   --prefill-chunk 16 --yolo --kv-dir $tmp/kv --trace $tmp/trace.jsonl \
   --test-scripted-output $tmp/script.json; echo AGENT-EXITED-\$?; sleep 60"
await 'DwarfStar .* Agent, context 8k tokens'
await 'ctx [1-9][0-9.k]*/[0-9.k]+ \| idle' 120
screen | tail -1 | grep -q '^ds4-agent>' || fail "no prompt row at the bottom"

# --- a turn ---
line "say hello"
await 'Hello from the scripted model\.'
await 'idle'
# --- /save, /list ---
line "/save"
await 'saved session [0-9a-f]{8} \([0-9]+ tokens\)'
id8=$(screen | grep -Eo 'saved session [0-9a-f]{8}' | tail -1 | cut -d' ' -f3)
line "/list"
await "^$id8 \* say hello"
# --- /new then /switch back with Tab completion: nothing evaluated ---
line "/new"
await '^new session'
keys -l "/switch ${id8:0:3}"
keys Tab
sleep 0.3
screen | tail -1 | grep -q "/switch $id8" || fail "Tab did not complete the id: $(screen | tail -1)"
keys Enter
await "switched to session $id8 \([0-9]+ tokens\)"
ev_new=$(grep '"event":"note"' "$tmp/trace.jsonl" | grep 'new session' | tail -1 | sed 's/.*"evaluated":\([0-9]*\).*/\1/')
ev_sw=$(grep '"event":"note"' "$tmp/trace.jsonl" | grep 'switched to session' | tail -1 | sed 's/.*"evaluated":\([0-9]*\).*/\1/')
[ -n "$ev_new" ] && [ "$ev_new" = "$ev_sw" ] || fail "/switch evaluated tokens: $ev_new -> $ev_sw"
# --- /history ---
line "/history"
await '^> say hello'
# --- an unknown command: the line comes back for editing ---
line "/nosuch"
sleep 0.3
screen | tail -1 | grep -q '/nosuch' || fail "an unknown command's line did not come back"
keys C-u
# --- Ctrl+C in the middle of a prefill: a long pasted prompt, 16 tokens per piece ---
printf '%s' "$long$long$long" > "$tmp/paste.txt"
T load-buffer -b big "$tmp/paste.txt"
T paste-buffer -p -b big -t ui
keys Enter
await '(reading|absorbing|studying|gathering|crunching|scrutinizing) \[' 60
keys C-c
await 'interrupted: the model saw [0-9]+ of the [0-9]+ tokens'
await 'idle|interrupted'
# --- Ctrl+C in the middle of a generation (a long scripted answer streaming) ---
line "keep going"
await 'generation [0-9]+ tokens' 60
keys C-c
await 'interrupted' 30
await 'idle' 30
# --- the next turn after the interruptions runs on a consistent session ---
line "again"
await 'After the interrupt\.'
# --- Ctrl+C in the middle of a compaction (a long scripted summary): the conversation is kept ---
line "/compact"
await 'COMPACTING summary [1-9][0-9]* tokens' 60  # the summary is being written
keys C-c
await 'compaction stopped \(interrupted\)' 30
await 'idle' 30
line "continue"
await 'After the cancelled compaction\.'
grep '"what":"user"' "$tmp/trace.jsonl" | tail -1 | grep -q '"text":"<｜User｜>continue' ||
  fail "the turn after the cancelled compaction"
# --- /strip, then /switch: the dirty session's question (no), rebuilt from text ---
line "/strip $id8"
await "stripped session $id8"
line "/switch $id8"
await 'first\? \[y/n\]'
keys n
await "switched to session $id8 \([0-9]+ tokens, rebuilt from text\)" 120
line "/quit"
await 'AGENT-EXITED-0' 30

# --- approval without --yolo: a shell command asks y/n in the prompt row ---
T kill-session -t ui
O='<｜DSML｜'
C='</｜DSML｜'
call() {  # a JSON string: one bash call running $1
  printf '"\\n\\n%stool_calls>\\n%sinvoke name=\\"bash\\">\\n%sparameter name=\\"command\\" string=\\"true\\">%s%sparameter>\\n%sinvoke>\\n%stool_calls>"' \
    "$O" "$O" "$O" "$1" "$C" "$C" "$C"
}
printf '[%s, "First done.", %s, "Second done."]' "$(call 'touch allowed.txt')" \
  "$(call 'touch refused.txt')" > "$tmp/ask.json"
T new-session -d -s ui -x 120 -y 40 \
  "cd $tmp/work && HOME=$tmp/home TERM=xterm-256color $AGENT -m $MODEL -c 8192 --nothink --seed 1 \
   --kv-dir $tmp/kv --test-scripted-output $tmp/ask.json; echo AGENT-EXITED-\$?; sleep 60"
await 'ctx [1-9][0-9.k]*/[0-9.k]+ \| idle' 120
line "make a file"
await 'allow: run a shell command: touch allowed.txt\? \[y/n\]'
keys y
await 'First done\.'
[ -e "$tmp/work/allowed.txt" ] || fail "an allowed command did not run"
line "make another"
await 'allow: run a shell command: touch refused.txt\? \[y/n\]'
keys n
await 'Second done\.'
[ -e "$tmp/work/refused.txt" ] && fail "a refused command ran"
screen | grep -q 'the user did not allow this' || fail "the refusal is not shown"
keys C-d
await 'save the current session [0-9a-f]{8} first\? \[y/n\]'
keys n
await 'AGENT-EXITED-0' 30
echo ok
