#!/usr/bin/env bash
# tools/cuda/serving_bench.sh: bench/serving.md's concurrent-stream figures, on the GPU
# machine from the repository root (.devdeps carried: headers, the vocabulary,
# promessi_sposi.txt, the serving libraries in .devdeps/serve). One `ds4-server --backend cuda` on
# the Flash q2 file with PARALLEL live sessions (default 32) of CTX tokens (default 4096: a 2k
# prompt and 256 generated tokens fit), then ds4-loadgen at CLIENTS concurrent streams (default
# "1 4 16 32"): 2k-token prompts cut from different parts of the text, 256 tokens each, no thinking.
# Each level writes loadgen's per-request CSV (serving-cN.csv) and its summary line; GPU memory
# is read before the model loads, after it, and after the largest level.
set -uo pipefail
out=${OUT:-/tmp}
source tools/cuda/common.sh
serve_tools_build serving || exit 1
ds4_flash_model > /dev/null
gpu_mem() { nvidia-smi --query-gpu=memory.used --format=csv,noheader | sed "s/^/$1: GPU memory used /"; }
gpu_mem "before the server"
port=18090
build-dev/bin/ds4-server -m "$DS4_FLASH" --backend cuda --port $port --ctx "${CTX:-4096}" \
  --parallel "${PARALLEL:-32}" ${BATCH_TOKENS:+--batch-tokens "$BATCH_TOKENS"} \
  > "$out/serving-server.log" 2>&1 &
pid=$!
python3 tools/cuda/server_drive.py health "http://127.0.0.1:$port" "$pid" || exit 1
head -5 "$out/serving-server.log"
gpu_mem "server up, sessions allocated"
summary=$out/serving_summary.csv
: > "$summary"
for c in ${CLIENTS:-1 4 16 32}; do
  build-dev/bin/ds4-loadgen --port $port -c "$c" -r 1 -n 256 --prompt-file .devdeps/promessi_sposi.txt \
    --prompt-chars 6500 --csv "$out/serving-c$c.csv" > "$out/serving-c$c.summary" 2>&1
  echo "loadgen -c $c: status $?"
  [[ -s $summary ]] || head -1 "$out/serving-c$c.summary" > "$summary"
  sed -n 2p "$out/serving-c$c.summary" >> "$summary"
done
gpu_mem "after the largest level"
kill -TERM "$pid" && wait "$pid"
echo "server exit $?"
cat "$summary"
