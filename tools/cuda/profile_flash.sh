#!/usr/bin/env bash
# tools/cuda/profile_flash.sh: per-kernel GPU times of one Flash q2 run with the CUDA backend
# (GPU machine, repository root, after verify_all.sh built build-dev and synthesized the file):
# ncu times every kernel launch (gpu__time_duration, clocks left alone) of `ds4` prefilling a
# ~500-token prompt and decoding 4 tokens. The raw CSV goes to $OUT/ncu.csv (launch order kept,
# so the prefill batch and each decoded token can be told apart).
set -euo pipefail
out=${OUT:-/tmp}
source tools/cuda/common.sh
model=$DS4_FLASH
head -c 2000 docs/engine.md > /tmp/prompt500.txt
ncu --version | tail -1
ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
  --page raw --log-file "$out/ncu.csv" build-dev/bin/ds4 -m "$model" --backend cuda \
  --prompt-file /tmp/prompt500.txt -n 4 --nothink --temp 0 --ctx 4096 --prefill-chunk 512 \
  > "$out/profile_out.txt" 2> "$out/profile_err.txt" || { tail "$out/profile_err.txt"; exit 1; }
tail -2 "$out/profile_err.txt"
wc -l "$out/ncu.csv"
