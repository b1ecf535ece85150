#!/usr/bin/env bash
# ds4-agent end to end on the tiny random model (CPU): the hidden --test-scripted-output hook makes
# each assistant round emit a given text, so a real multi-step task runs in a temporary directory:
# read a file, edit it with the exact and the [upto] forms, run a command and start a background
# job, get a tool error, write invalid DSML, recover, answer. Checked: the file on disk, the tool
# results in the --trace file, the model text on stdout, exit 0; --deny-unsafe refuses a command;
# stdin mode prints its markers and hands input queued during a turn to the next tool result; a
# worker error exits 1; usage errors (no --yolo / --deny-unsafe without a terminal) exit 2 with
# one line; --help does not list the test hook. With --mtp (the MTP file, $3): the same task gives
# the same results (every draft is checked against the scripted tokens and the edit watch's feed),
# and a greedy answer is the answer without drafts.
set -u
AGENT=$1
MODEL=$2
MTP=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ds4_agent_cli_XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The agent keeps each bash job's output file (ds4_agent_output_XXXXXX in $TMPDIR) after it exits:
# here they go into $tmp, which the trap removes.
export TMPDIR=$tmp
fail() { echo "FAIL: $*" >&2; exit 1; }
O='<｜DSML｜'
C='</｜DSML｜'
# A JSON string of one tool-call block; $1: the invokes (JSON-escaped already).
block() { printf '"\\n\\n%stool_calls>\\n%s%stool_calls>"' "$O" "$1" "$C"; }
inv() { printf '%sinvoke name=\\"%s\\">\\n%s%sinvoke>\\n' "$O" "$1" "$2" "$C"; }
par() { printf '%sparameter name=\\"%s\\" string=\\"%s\\">%s%sparameter>\\n' "$O" "$1" "${3:-true}" "$2" "$C"; }
run() { timeout 120 "$AGENT" -m "$MODEL" -c 8192 --nothink --seed 1 "$@"; }

# --- the multi-step task (extra flags: $@) ---
task() {
work="$tmp/work"
rm -rf "$work"
mkdir "$work"
printf 'alpha = 1\nbeta = 2\ngamma = 3\ndelta = 4\nepsilon = 5\n' > "$work/notes.txt"
{
  echo "["
  block "$(inv read "$(par path notes.txt)")"; echo ","
  block "$(inv edit "$(par path notes.txt)$(par old 'beta = 2')$(par new 'beta = 20')")"; echo ","
  block "$(inv edit "$(par path notes.txt)$(par old 'gamma = 3\n[upto]\nepsilon = 5')$(par new 'gamma = 30\nepsilon = 50')")"; echo ","
  block "$(inv bash "$(par command 'echo from-bash > out.txt; cat out.txt')")$(inv bash "$(par command 'echo job-started; sleep 30')$(par refresh_sec 1 false)")"; echo ","
  block "$(inv edit "$(par path notes.txt)$(par old 'no such line')$(par new x)")"; echo ","
  printf '"\\n\\n%stool_calls>\\n%sinvoke name=\\"read\\">\\n%sparameter name=\\"path\\" string=\\"true\\">notes.txt"' "$O" "$O" "$O"; echo ","
  block "$(inv read "$(par path notes.txt)")$(inv bash_stop "$(par job 2 false)")"; echo ","
  echo '"All done: notes.txt is updated."'
  echo "]"
} > "$tmp/script.json"
rm -f "$tmp/trace.jsonl"
(cd "$work" && run --non-interactive --yolo --trace "$tmp/trace.jsonl" \
   --test-scripted-output "$tmp/script.json" -p "Update notes.txt." "$@" > "$tmp/out" 2> "$tmp/err")
rc=$?
[ $rc -eq 0 ] || { cat "$tmp/err"; fail "exit $rc"; }
expected=$'alpha = 1\nbeta = 20\ngamma = 30\nepsilon = 50'
[ "$(cat "$work/notes.txt")" = "$expected" ] || fail "notes.txt is: $(cat "$work/notes.txt")"
[ "$(cat "$work/out.txt")" = "from-bash" ] || fail "out.txt"
grep -q 'All done: notes.txt is updated.' "$tmp/out" || fail "the final text is not on stdout"
results=$(grep '"event":"tool_result"' "$tmp/trace.jsonl")
[ "$(echo "$results" | wc -l)" -eq 7 ] || fail "expected 7 tool results: $results"
r() { echo "$results" | sed -n "${1}p"; }
r 1 | grep -q 'notes.txt: lines 1-5 of 5' || fail "read: $(r 1)"
r 2 | grep -q 'using old/new replacement' || fail "exact edit: $(r 2)"
r 3 | grep -q 'using anchored old/new replacement' || fail "[upto] edit: $(r 3)"
r 4 | grep -q 'from-bash' || fail "bash: $(r 4)"
r 4 | grep -q 'bash job=2 pid=[0-9]* status=running' || fail "background job: $(r 4)"
r 5 | grep -q 'Tool result 1 (edit):\\nTool error: ' || fail "tool error: $(r 5)"
r 6 | grep -q 'Tool error: invalid DSML tool call: the tool call block was not closed' ||
  fail "invalid DSML: $(r 6)"
r 6 | grep -q 'DSML syntax reminder' || fail "no syntax reminder: $(r 6)"
r 7 | grep -q 'beta = 20' || fail "recovery read: $(r 7)"
r 7 | grep -q 'bash job=2 pid=[0-9]* status=done' || fail "bash_stop: $(r 7)"
[ "$(grep -c '"event":"round"' "$tmp/trace.jsonl")" -eq 8 ] || fail "expected 8 rounds"
grep -q '^\[tool\] edit path=notes.txt' "$tmp/err" || fail "tool calls are not shown on stderr"
}
task
grep -q '"mtp_steps"' "$tmp/trace.jsonl" && fail "rounds without --mtp recorded drafts"
task --mtp "$MTP" --mtp-draft 3 --mtp-margin 0
grep -q '"event":"round".*"mtp_steps":[1-9]' "$tmp/trace.jsonl" || fail "no drafts recorded with --mtp"

# --- --mtp: a greedy answer is the answer without drafts ---
(cd "$work" && run --non-interactive --yolo --temp 0 -n 24 -p "Say hello." > "$tmp/plain" 2>&1) ||
  fail "greedy run"
(cd "$work" && run --non-interactive --yolo --temp 0 -n 24 -p "Say hello." --mtp "$MTP" \
   --mtp-draft 2 --mtp-margin 0 > "$tmp/drafted" 2>&1) || fail "greedy run with --mtp"
cmp -s "$tmp/plain" "$tmp/drafted" || fail "--mtp changed the greedy answer: $(diff "$tmp/plain" "$tmp/drafted")"

# --- --deny-unsafe: the command is refused, nothing runs ---
printf '[%s, "ok"]' "$(block "$(inv bash "$(par command 'touch denied.txt')")")" > "$tmp/deny.json"
(cd "$work" && run --non-interactive --deny-unsafe --trace "$tmp/deny.jsonl" \
   --test-scripted-output "$tmp/deny.json" -p "x" > /dev/null 2> "$tmp/err") || fail "deny run"
[ ! -e "$work/denied.txt" ] || fail "a denied command ran"
grep -q 'Tool error: the user did not allow this (run a shell command: touch denied.txt)' \
  "$tmp/deny.jsonl" || fail "no denial in the trace"

# --- stdin mode: markers, queued input, exit 0 at EOF ---
printf '[%s, "second seen"]' "$(block "$(inv bash "$(par command 'sleep 2')$(par refresh_sec 10 false)")")" > "$tmp/stdin.json"
mkfifo "$tmp/in"
(cd "$work" && run --non-interactive --yolo --trace "$tmp/stdin.jsonl" \
   --test-scripted-output "$tmp/stdin.json" < "$tmp/in" > "$tmp/out" 2> "$tmp/serr") &
agent=$!
exec 3> "$tmp/in"
# Waits (up to 60 s) until stderr holds $2 lines matching $1.
await() {
  for _ in $(seq 600); do
    [ "$(grep -c -- "$1" "$tmp/serr")" -ge "$2" ] && return 0
    sleep 0.1
  done
  fail "no '$1' on stderr: $(cat "$tmp/serr")"
}
await '^+DWARFSTAR_WAITING$' 1
printf 'first prompt\n' >&3
await '^\[tool\] bash' 1  # the turn runs `sleep 2`: input now is queued
printf 'queued prompt\n' >&3
await '^+DWARFSTAR_WAITING$' 2
exec 3>&-
wait $agent
rc=$?
[ $rc -eq 0 ] || { cat "$tmp/serr"; fail "stdin mode exit $rc"; }
grep -q '^+DWARFSTAR_QUEUED$' "$tmp/serr" || fail "no queued marker: $(cat "$tmp/serr")"
grep '"what":"tool"' "$tmp/stdin.jsonl" | grep -q 'queued prompt' ||
  fail "queued input not appended with the tool result"
grep -q 'second seen' "$tmp/out" || fail "stdin mode output"

# --- a worker error (the system prompt does not fit) exits 1 ---
timeout 60 "$AGENT" -m "$MODEL" -c 256 --non-interactive --yolo -p x > /dev/null 2> "$tmp/err"
[ $? -eq 1 ] || fail "a worker error must exit 1"
grep -q 'does not fit' "$tmp/err" || fail "context error: $(cat "$tmp/err")"

# --- usage errors: status 2, one line ---
"$AGENT" -m "$MODEL" --non-interactive -p x > /dev/null 2> "$tmp/err"
[ $? -eq 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q -- '--yolo' "$tmp/err" ||
  fail "non-interactive without --yolo: $(cat "$tmp/err")"
# no terminal (stdin and stdout are not one): the plain mode, which cannot ask either
"$AGENT" -m "$MODEL" -p x < /dev/null > /dev/null 2> "$tmp/err"
[ $? -eq 2 ] && grep -q 'without a terminal' "$tmp/err" || fail "no terminal: $(cat "$tmp/err")"
"$AGENT" --non-interactive --yolo --deny-unsafe -p x > /dev/null 2>&1
[ $? -eq 2 ] || fail "--yolo with --deny-unsafe"
"$AGENT" --help > "$tmp/help" || fail "--help"
grep -q 'test-scripted-output\|test-save-pause' "$tmp/help" && fail "a test hook is listed in --help"
grep -q -- '--kv-dir' "$tmp/help" || fail "--help does not list --kv-dir"
echo "ok"
