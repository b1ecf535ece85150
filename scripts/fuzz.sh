#!/usr/bin/env bash
# scripts/fuzz.sh BUILD_DIR SECONDS NAME:MAX_LEN:CORPUS...: runs each libFuzzer target of
# BUILD_DIR/bin for SECONDS on BUILD_DIR/corpus/CORPUS, FUZZ_JOBS (default 2) at a time: a fuzzer
# is one process on one core, so on 2 cores six 30 s runs take 90 s instead of 180 s. Each run's
# output goes to BUILD_DIR/fuzz-NAME.log and is printed when it ends; the script fails if any
# fuzzer fails (a crash, a leak, a sanitizer report), naming it.
set -uo pipefail
dir=$1 seconds=$2
shift 2
jobs=${FUZZ_JOBS:-2}

failed=()
pids=() names=()
finish_batch() {
  local i
  for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then failed+=("${names[$i]}"); fi
    echo "=== ${names[$i]} ($dir/fuzz-${names[$i]}.log)"
    cat "$dir/fuzz-${names[$i]}.log"
  done
  pids=() names=()
}

for spec in "$@"; do
  IFS=: read -r name max_len corpus <<<"$spec"
  "$dir/bin/$name" -max_total_time="$seconds" -max_len="$max_len" -print_final_stats=1 \
    "$dir/corpus/$corpus" >"$dir/fuzz-$name.log" 2>&1 &
  pids+=($!) names+=("$name")
  if ((${#pids[@]} >= jobs)); then finish_batch; fi
done
finish_batch

if ((${#failed[@]} > 0)); then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ok ($# fuzzers, ${seconds} s each, $jobs at a time)"
