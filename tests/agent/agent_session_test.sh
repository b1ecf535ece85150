#!/usr/bin/env bash
# ds4-agent's session files end to end on the tiny random model (CPU), through the plain mode's
# stdin commands (a submission whose lines all start with '/' is a series of commands):
# - a first start evaluates the system prompt and writes sysprompt.kv; the next start loads it
#   (zero tokens evaluated, from the trace's engine counter);
# - /save writes `saved session <id> (N tokens)`; a new process /switch-es to it with zero tokens
#   evaluated and the same token count; /list shows it with its title; /history shows its turn;
# - /strip keeps the text: /switch then rebuilds it from text;
# - kill -9 during a /save (paused halfway by the hidden --test-save-pause-ms) leaves the previous
#   save loadable, with its token count;
# - hostile files (truncated, a byte flipped, renamed, written by another model, absurd size) are
#   refused with a message naming the problem, and the agent goes on;
# - a compaction (/compact, its summary scripted) shrinks the transcript and the turn after it runs.
set -u
AGENT=$1
MODEL=$2
GGUF=$3
VOCAB=$4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ds4_agent_session_XXXXXX")
agent_pid=
cleanup() { [ -n "$agent_pid" ] && kill -9 "$agent_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
kv="$tmp/kv"
work="$tmp/work"
mkdir -p "$work"
# One agent process reading commands from a fifo; $1: trace file, rest: extra flags.
start_agent() {
  local trace=$1
  shift
  rm -f "$tmp/in"
  mkfifo "$tmp/in"
  (cd "$work" && exec timeout 300 "$AGENT" -m "$MODEL" -c 4096 --nothink --seed 1 \
     --non-interactive --yolo --kv-dir "$kv" --trace "$trace" "$@" \
     < "$tmp/in" > "$tmp/out" 2> "$tmp/err") &
  agent_pid=$!
  exec 3> "$tmp/in"
}
stop_agent() {
  exec 3>&-
  wait "$agent_pid"
  local rc=$?
  agent_pid=
  return $rc
}
# Waits (up to 60 s) until file $1 holds $3 lines matching $2.
await() {
  for _ in $(seq 600); do
    [ "$(grep -c -- "$2" "$1" 2>/dev/null)" -ge "$3" ] && return 0
    sleep 0.1
  done
  fail "no '$2' in $1: $(cat "$1")"
}
send() { printf '%s\n' "$1" >&3; }
# The engine's evaluated-token counter at the trace's last note matching $2 in trace $1.
evaluated_at() { grep '"event":"note"' "$1" | grep -- "$2" | tail -1 | sed 's/.*"evaluated":\([0-9]*\).*/\1/'; }

# --- first run: the system prompt is evaluated and checkpointed; a turn, then /save ---
printf '["First answer.", "Second answer."]' > "$tmp/s1.json"
start_agent "$tmp/t1.jsonl" --test-scripted-output "$tmp/s1.json"
await "$tmp/err" '^+DWARFSTAR_WAITING$' 1
[ -f "$kv/sysprompt.kv" ] || fail "no sysprompt.kv after the first start"
send "remember the number 42"
await "$tmp/err" '^+DWARFSTAR_WAITING$' 2
send "/save"
await "$tmp/out" '^saved session [0-9a-f]\{8\} ([0-9]* tokens)$' 1
line=$(grep '^saved session' "$tmp/out" | tail -1)
id8=$(echo "$line" | sed 's/saved session \([0-9a-f]*\) .*/\1/')
tokens1=$(echo "$line" | sed 's/.*(\([0-9]*\) tokens)/\1/')
# a second turn and a save that is killed halfway
send "and now 43"
await "$tmp/err" '^+DWARFSTAR_WAITING$' 4
stop_agent || fail "first run exit"
ls "$kv"/*.kv | grep -q "/$id8[0-9a-f]*\.kv$" || fail "no file for session $id8: $(ls "$kv")"

printf '["Third answer."]' > "$tmp/s2.json"
start_agent "$tmp/t2.jsonl" --test-save-pause-ms 30000 --test-scripted-output "$tmp/s2.json"
await "$tmp/err" '^+DWARFSTAR_WAITING$' 1
grep '"what":"system"' "$tmp/t2.jsonl" >/dev/null || fail "no system prompt in the trace"
send "/switch $id8"
await "$tmp/out" "^switched to session $id8 ($tokens1 tokens)" 1
[ "$(evaluated_at "$tmp/t2.jsonl" 'switched to session')" = "0" ] ||
  fail "the system prompt checkpoint and the switch must evaluate no token: $(grep '"note"' "$tmp/t2.jsonl")"
grep -q 'remember the number 42' "$tmp/out" || fail "/switch does not show the last user turns"
send "/history 5"
await "$tmp/out" '^> remember the number 42$' 2
send "/list"
await "$tmp/out" "^$id8 \* remember the number 42$" 1
grep -q "$tokens1 tokens, [0-9.]* MB" "$tmp/out" || fail "/list: $(cat "$tmp/out")"
# a turn, then a save killed halfway
send "one more turn"
await "$tmp/err" '^+DWARFSTAR_WAITING$' 5
send "/save"
await "$tmp/err" '^\[saving session\]$' 1
sleep 1
# SIGKILL to the agent under `timeout`, which reaps it and exits (a killed process whose parent
# is gone may stay a zombie, and a zombie's pid still answers kill(pid, 0))
pkill -KILL -P "$agent_pid"
wait "$agent_pid" 2>/dev/null
agent_pid=
exec 3>&-
ls -a "$kv" | grep -q '\.tmp\.' || fail "the killed save left no temporary file (was it paused?)"

# --- the previous save still loads, with its token count; the stale temporary is removed ---
start_agent "$tmp/t3.jsonl"
await "$tmp/err" '^+DWARFSTAR_WAITING$' 1
ls -a "$kv" | grep -q '\.tmp\.' && fail "a dead writer's temporary file was not removed"
send "/switch $id8"
await "$tmp/out" "^switched to session $id8 ($tokens1 tokens)" 1

# --- /strip, then /switch rebuilds from text ---
send "/strip $id8"
await "$tmp/out" "^stripped session $id8" 1
send "/list"
await "$tmp/out" 'stripped$' 1
send "/switch $id8"
await "$tmp/out" "^switched to session $id8 ([0-9]* tokens, rebuilt from text)" 1
stop_agent || fail "third run exit"

# --- hostile files: each refused with a message, the agent goes on ---
file=$(ls "$kv"/"$id8"*.kv)
full=$(basename "$file" .kv)
cp "$file" "$tmp/good.kv"
# a healthy full save to damage (the stripped one has no payload)
printf '["Fresh answer."]' > "$tmp/s4.json"
start_agent "$tmp/t4.jsonl" --test-scripted-output "$tmp/s4.json"
await "$tmp/err" '^+DWARFSTAR_WAITING$' 1
send "hostile fixture"
await "$tmp/err" '^+DWARFSTAR_WAITING$' 2
send "/save"
await "$tmp/out" '^saved session' 1
stop_agent || fail "fourth run exit"
hid=$(grep '^saved session' "$tmp/out" | sed 's/saved session \([0-9a-f]*\) .*/\1/')
hfile=$(ls "$kv"/"$hid"*.kv)
cp "$hfile" "$tmp/h.kv"
size=$(stat -c %s "$tmp/h.kv")
check_refused() {  # $1: what, $2: pattern of the message
  start_agent "$tmp/t5.jsonl"
  await "$tmp/err" '^+DWARFSTAR_WAITING$' 1
  send "/switch $hid"
  await "$tmp/err" "$2" 1
  send "/list"
  await "$tmp/err" '^+DWARFSTAR_WAITING$' 3
  stop_agent || fail "$1: the agent did not go on"
}
head -c $((size / 2)) "$tmp/h.kv" > "$hfile"
check_refused truncated 'ds4-agent: session file .*'
cp "$tmp/h.kv" "$hfile"
printf '\xff' | dd of="$hfile" bs=1 seek=$((size - 100)) conv=notrunc 2>/dev/null
check_refused "flipped byte" 'ds4-agent: session file .*checksum'
cp "$tmp/h.kv" "$hfile"
# renamed: the file under another name (its record names another id)
renamed="$kv/${hid}$(printf '%032d' 0).kv"
mv "$hfile" "$renamed"
check_refused renamed 'ds4-agent: .*name'
mv "$renamed" "$hfile"
# another model: the same file under a model synthesized with another seed
"$GGUF" synth --shape tiny --quant q2 --seed 2 --vocab "$VOCAB" -o "$tmp/other.gguf" > /dev/null ||
  fail "synth"
(MODEL="$tmp/other.gguf"; start_agent "$tmp/t6.jsonl"
 await "$tmp/err" '^+DWARFSTAR_WAITING$' 1
 send "/switch $hid"
 await "$tmp/err" 'ds4-agent: .*another model' 1
 stop_agent) || fail "another model"
# absurd size: a sparse file far beyond any session
rm -f "$hfile"
cp "$tmp/h.kv" "$hfile"
if truncate -s 4T "$hfile" 2>/dev/null || truncate -s 200G "$hfile" 2>/dev/null; then
  check_refused "absurd size" 'ds4-agent: session file .*exceed the .*-byte limit'
else
  echo "note: this file system makes no sparse file that large: the absurd-size case is skipped"
fi
cp "$tmp/h.kv" "$hfile"

# --- /compact: the summary (scripted) replaces the conversation; the next turn runs ---
long=$(for i in $(seq 400); do printf 'note%d ' "$i"; done)
printf '["%s", "Answer two.", "Goals: keep notes. Files: none. Next: nothing.", "After compaction."]' \
  "$long" > "$tmp/s7.json"
start_agent "$tmp/t7.jsonl" --test-scripted-output "$tmp/s7.json"
await "$tmp/err" '^+DWARFSTAR_WAITING$' 1
send "first message of a long talk"
await "$tmp/err" '^+DWARFSTAR_WAITING$' 2
send "second message"
await "$tmp/err" '^+DWARFSTAR_WAITING$' 3
send "/compact"
await "$tmp/err" '^\[compacted\] [0-9]* -> [0-9]* tokens$' 1
send "what next?"
await "$tmp/out" '^After compaction.$' 1
send "/history 5"
await "$tmp/out" '^\[compacted summary\]$' 1
grep -q '^Goals: keep notes. Files: none. Next: nothing.$' "$tmp/out" || fail "no summary in /history"
grep -q '^> first message of a long talk$' "$tmp/out" && fail "the compacted turn is still there"
stop_agent || fail "compaction run exit"
grep '"event":"compaction"' "$tmp/t7.jsonl" | grep -q '"ok":true' || fail "no compaction in the trace"
grep '"what":"user"' "$tmp/t7.jsonl" | tail -1 | grep -q 'what next' || fail "the turn after"
echo "ok"
