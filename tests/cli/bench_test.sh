#!/usr/bin/env bash
# tests/cli/bench_test.sh DS4_BENCH MODEL: tiny ds4-bench sweeps (frontiers 64..256 by 64, 4-token
# probes) on the generated test model. Checks the CSV (comment line, header, one row per frontier,
# strictly increasing frontiers, positive numbers, growing snapshots), --step-mul growth, that the
# probes are the same in two runs and in a sweep that starts at a later frontier (restoring the
# snapshot after each probe leaves the session exactly at the frontier), and that usage errors
# print one line and exit with status 2.
set -euo pipefail
bench=$1 model=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# About 120 tokens of text: shorter than --ctx-max, so ds4-bench repeats it.
for _ in $(seq 6); do
  echo "Quel ramo del lago di Como, che volge a mezzogiorno, tra due catene non interrotte di monti"
done >"$work/prompt.txt"

# run_bench START [ARGS...]: a sweep from frontier START to 256 on the test prompt.
run_bench() {
  local start=$1
  shift
  "$bench" -m "$model" -t 1 --prompt-file "$work/prompt.txt" --ctx-start "$start" --ctx-max 256 \
    --print-probe "$@"
}
# run_ok NAME START [ARGS...]: run_bench with stdout in NAME.csv and stderr in NAME.err.
run_ok() {
  local name=$1
  shift
  run_bench "$@" >"$work/$name.csv" 2>"$work/$name.err" || { cat "$work/$name.err"; exit 1; }
}
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
frontiers() { tail -n +3 "$work/$1.csv" | cut -d, -f1 | paste -sd,; }
probes() { grep -E "^probe ${2:-[0-9]+}:" "$work/$1.err"; }  # probes NAME [FRONTIER-REGEX]

run_ok a 64 --step-incr 64 --gen-tokens 4
run_ok b 64 --step-incr 64 --gen-tokens 4 --csv "$work/b.file"
run_ok c 128 --step-incr 64 --gen-tokens 4  # a fresh prefill of 128 tokens
run_ok d 48 --step-incr 1 --step-mul 2 --gen-tokens 1
run_ok e 64 --step-incr 64 --gen-tokens 9 --spec-replay 4,9  # drafts 4 + 4 + 1, then 9
mtp=$(dirname "$model")/tiny-mtp.gguf  # the MTP file of the model files' fixture
run_ok f 192 --step-incr 64 --gen-tokens 9 --mtp "$mtp" --mtp-draft 2 --mtp-margin 0 --spec-replay 3
run_ok g 64 --sessions 1,3 --stride 16 --gen-tokens 7 --spec-replay 3  # 3 + 3 + 1 rows each

header=frontier,prefill_tokens,prefill_s,prefill_tps,gen_tokens,gen_s,gen_tps,kv_bytes
header+=,snapshot_s,restore_s
comment='^# model=.* backend=cpu shape=tiny ctx=261 state_bytes=[0-9]+ bytes_per_token=[0-9.]+ '
check "comment line" "head -1 '$work/a.csv' | grep -Eq '$comment'"
check "header" "sed -n 2p '$work/a.csv' | grep -qx '$header'"
check "frontiers 64,128,192,256" "[[ \$(frontiers a) == 64,128,192,256 ]]"
check "rows: positive numbers, 64 prefilled, 4 generated, frontier and kv_bytes increasing" \
  "tail -n +3 '$work/a.csv' | awk -F, '
    NF != 10 { exit 1 }
    { for (i = 1; i <= NF; ++i) if (!(\$i ~ /^[0-9]+(\\.[0-9]+)?\$/ && \$i + 0 > 0)) exit 1 }
    \$2 != 64 || \$5 != 4 { exit 1 }
    NR > 1 && (\$1 <= f || \$8 <= kv) { exit 1 }
    { f = \$1; kv = \$8 }'"
check "--csv writes the file, stdout stays empty" \
  "[[ ! -s '$work/b.csv' ]] && [[ \$(wc -l <'$work/b.file') == 6 ]]"
check "one 4-token probe per frontier" \
  "[[ \$(grep -Ec '^probe [0-9]+: [0-9]+ [0-9]+ [0-9]+ [0-9]+\$' '$work/a.err') == 4 ]]"
check "probes repeat across runs" "[[ \$(probes a | wc -l) == 4 ]] && diff <(probes a) <(probes b)"
check "probes match a sweep starting later" \
  "[[ \$(probes c | wc -l) == 3 ]] && diff <(probes a '(128|192|256)') <(probes c)"
check "--step-mul 2 frontiers 48,96,192,256" "[[ \$(frontiers d) == 48,96,192,256 ]]"
check "summary on stderr" "grep -q '^ds4-bench: 4 frontiers 64..256' '$work/a.err'"
check "--spec-replay decodes each probe again, every draft kept, in 3 steps" \
  "[[ \$(grep -c 'replay of 9 tokens with 4 drafts per step: [0-9.]* t/s, 3 steps, 9 of 9 drafts kept, [0-9.]* ms per step' '$work/e.err') == 4 ]]"
check "--spec-replay 4,9 replays once per N: 9 drafts in one step" \
  "[[ \$(grep -c 'replay of 9 tokens with 9 drafts per step: [0-9.]* t/s, 1 steps, 9 of 9 drafts kept' '$work/e.err') == 4 ]]"
check "--mtp decodes each probe again in steps of the greedy token and 2 drafts, the same tokens" \
  "[[ \$(grep -c 'mtp decode of 9 tokens with 2 drafts per step: [0-9.]* t/s, [0-9]* steps, [0-9]* drafts kept, [0-9.]* ms per step, the probe.s tokens' '$work/f.err') == 2 ]]"
check "--mtp with --spec-replay 3 replays each probe with the MTP block's drafting paid: 3 steps, every draft kept" \
  "[[ \$(grep -c 'mtp replay of 9 tokens with 3 drafts per step: [0-9.]* t/s, 3 steps, 9 of 9 drafts kept' '$work/f.err') == 2 ]]"
check "--sessions with --spec-replay 3 replays every session's probe in one step of N verifications: 3 steps, every row kept" \
  "grep -q '^ds4-bench: 1 sessions at 64: replay of 3 rows per session and step: [0-9.]* t/s aggregate, 3 steps, [0-9.]* ms per step, 7 of 7 rows kept' '$work/g.err' &&
   grep -q '^ds4-bench: 3 sessions at 64: replay of 3 rows per session and step: [0-9.]* t/s aggregate, 3 steps, [0-9.]* ms per step, 21 of 21 rows kept' '$work/g.err'"

# usage_error NAME PATTERN COMMAND...: exit status 2 and one stderr line that contains PATTERN.
usage_error() {
  local name=$1 pattern=$2 rc=0
  shift 2
  "$@" >/dev/null 2>"$work/err" || rc=$?
  check "usage error: $name" \
    "(( rc == 2 )) && [[ \$(wc -l <'$work/err') == 1 ]] && grep -q -- '$pattern' '$work/err'"
}
: >"$work/empty.txt"
usage_error "no prompt file" "--prompt-file is required" "$bench" -m "$model"
usage_error "missing prompt file" "cannot read prompt file" \
  "$bench" -m "$model" --prompt-file "$work/none.txt"
usage_error "missing model" "not found" \
  "$bench" -m "$work/none.gguf" --prompt-file "$work/prompt.txt"
usage_error "empty prompt" "has no text" \
  "$bench" -m "$model" --prompt-file "$work/empty.txt" --ctx-start 64 --ctx-max 64
usage_error "ctx-start above ctx-max" "is above --ctx-max" run_bench 512
usage_error "gen-tokens 0" "--gen-tokens" run_bench 64 --gen-tokens 0
usage_error "step-mul below 1" "--step-mul" run_bench 64 --step-mul 0.5
usage_error "ctx too small" "must exceed" run_bench 64 --gen-tokens 4 --ctx 260
usage_error "unknown flag" "bogus" run_bench 64 --bogus
usage_error "mtp-draft 5" "--mtp-draft" run_bench 64 --mtp "$mtp" --mtp-draft 5
usage_error "a main model as the MTP file" "is not an MTP draft file" run_bench 64 --mtp "$model"
exit $fail
