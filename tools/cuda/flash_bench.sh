#!/usr/bin/env bash
# tools/cuda/flash_bench.sh CTX_MAX [GEN] [STEP]: ds4-bench on the Flash q2 file with the CUDA
# backend (GPU machine, repository root, .devdeps carried). The prompt is PROMPT, by default
# .devdeps/promessi_sposi.txt (a copy of ../shared/fixtures/text/promessi_sposi.txt, never
# committed), else the repository's docs. CSV and logs under $OUT.
set -euo pipefail
out=${OUT:-/tmp}
ctx_max=${1:-8192} gen=${2:-16} step=${3:-2048}
# Frontier growth: STEP_MUL=F multiplies (--step-mul), else step adds; CTX_START, OUT_CSV and
# CHUNK override the first frontier, the CSV's name and the prefill chunk (default 2048 rows);
# SPEC=N[,N..] adds ds4-bench's --spec-replay, MTP=FILE (MTP_DRAFT, default 2) its --mtp (with --mtp-margin 0: random weights).
if [[ -n ${STEP_MUL:-} ]]; then growth=(--step-mul "$STEP_MUL"); else growth=(--step-incr "$step"); fi
csv=$out/${OUT_CSV:-flash_q2_cuda.csv}
source tools/cuda/common.sh
ds4_build ds4-gguf ds4-bench > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
model=$DS4_FLASH
ds4_flash_model > /dev/null
prompt=${PROMPT:-.devdeps/promessi_sposi.txt}
if [[ ! -s $prompt ]]; then cat docs/*.md README.md DEVELOPERS.md > /tmp/prompt.txt; prompt=/tmp/prompt.txt; fi
/usr/bin/time -f "ds4-bench wall %e s" build-dev/bin/ds4-bench -m "$model" --backend cuda \
  --prompt-file "$prompt" --ctx-start "${CTX_START:-2048}" --ctx-max "$ctx_max" "${growth[@]}" \
  --gen-tokens "$gen" --prefill-chunk "${CHUNK:-2048}" --op-times --print-probe --csv "$csv" \
  ${SPEC:+--spec-replay "$SPEC"} ${MTP:+--mtp "$MTP" --mtp-draft "${MTP_DRAFT:-2}" --mtp-margin 0} \
  2> "$out/bench_err.txt" || true
cat "$csv"; grep "host ms" "$out/bench_err.txt"; tail -3 "$out/bench_err.txt"
