#!/usr/bin/env bash
# tools/cuda/power_bench.sh: --power on the GPU (issue 54, bench/power.md). For each P in POWERS
# (default 100 70 50 30): ds4-bench --power P on the Flash q2 file prefills a CTX-token prompt
# (default 32768) and decodes after it for about DECODE_S seconds (default 60: GEN tokens at full
# speed, scaled by P), while nvidia-smi samples GPU utilisation and power draw every 100 ms. Each
# stderr line of ds4-bench is stamped with the clock, so the prefill and decode windows are cut
# from the sweep's start and the CSV's times; tools/cuda/power_table.py prints, per P and phase,
# the throughput, the mean utilisation and power, and each against P% of the full-power run's.
# GPU machine, repository root, .devdeps carried. Logs and CSVs under $OUT.
set -uo pipefail
out=${OUT:-/tmp/power}
mkdir -p "$out"
source tools/cuda/common.sh
ds4_build ds4-gguf ds4-bench > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
ds4_flash_model > /dev/null || exit 1
ctx=${CTX:-32768} decode_s=${DECODE_S:-60} full_tps=${FULL_TPS:-100}
prompt=${PROMPT:-.devdeps/promessi_sposi.txt}
for p in ${POWERS:-100 70 50 30}; do
  gen=$((decode_s * full_tps * p / 100))
  nvidia-smi --query-gpu=timestamp,utilization.gpu,power.draw --format=csv,noheader,nounits \
    -lms 100 > "$out/nvml-$p.csv" &
  smi=$!
  build-dev/bin/ds4-bench -m "$DS4_FLASH" --backend cuda --prompt-file "$prompt" \
    --ctx-start "$ctx" --ctx-max "$ctx" --gen-tokens "$gen" --power "$p" \
    --csv "$out/bench-$p.csv" 2>&1 |
    while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done > "$out/bench-$p.err"
  kill "$smi" 2>/dev/null
  wait "$smi" 2>/dev/null
  tail -2 "$out/bench-$p.err"
done
python3 tools/cuda/power_table.py "$out" ${POWERS:-100 70 50 30} | tee "$out/power_table.md"
