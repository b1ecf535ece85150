#!/usr/bin/env bash
# tools/cuda/long_prompt_bench.sh: issue 55's long-prompt scenario on the GPU machine, from the
# repository root (.devdeps carried). One `ds4-server --backend cuda` on the Flash q2 file with a
# context that holds the long prompt, then ds4-loadgen --long-prompt-chars: CLIENTS (default 4)
# clients decoding 400 tokens of 2k-token prompts while a LONG_CHARS-character prompt (default
# 160,000: ~48k tokens of promessi_sposi.txt) prefills beside them, after the same prompt alone.
# Run once per ITL target in TARGETS (default "100 0": the pacing on and off, side by side); each
# writes long-tN.csv (per request) and long-tN.summary (bench/serving.md's long-prompt row).
set -uo pipefail
out=${OUT:-/tmp}
source tools/cuda/common.sh
serve_tools_build long || exit 1
ds4_flash_model > /dev/null
port=18091
for t in ${TARGETS:-100 0}; do
  build-dev/bin/ds4-server -m "$DS4_FLASH" --backend cuda --port $port --ctx "${CTX:-65536}" \
    --parallel "${PARALLEL:-6}" --itl-target-ms "$t" > "$out/long-t$t-server.log" 2>&1 &
  pid=$!
  python3 tools/cuda/server_drive.py health "http://127.0.0.1:$port" "$pid" || exit 1
  build-dev/bin/ds4-loadgen --port $port -c "${CLIENTS:-4}" -n 400 \
    --prompt-file .devdeps/promessi_sposi.txt --prompt-chars 6500 \
    --long-prompt-chars "${LONG_CHARS:-160000}" --csv "$out/long-t$t.csv" > "$out/long-t$t.summary"
  echo "loadgen --itl-target-ms $t: status $?"
  cat "$out/long-t$t.summary"
  kill -TERM "$pid" && wait "$pid"
done
