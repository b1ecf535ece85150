#!/usr/bin/env bash
# tools/cuda/serve_sanitize.sh: ds4-server --backend cuda on the small test shape (q2, seed 1) with
# 32 live sessions, driven by ds4-loadgen at CLIENTS concurrent streams (default "16 32"; 2k-token
# prompts, GEN tokens each, default 128), first plainly and then under compute-sanitizer memcheck
# (MODES, default "plain san"). On the GPU machine from the repository root (.devdeps carried);
# fails when a level fails or the sanitizer reports an error. It found the out-of-bounds
# attention scratch of decode steps of 16 or more sequences.
set -uo pipefail
out=${OUT:-/tmp}
source tools/cuda/common.sh
serve_tools_build sanitize || exit 1
m=/dev/shm/ds4-models/small-q2.gguf
mkdir -p "$(dirname "$m")"
[[ -s $m ]] || build-dev/bin/ds4-gguf synth --shape small --quant q2 --seed 1 \
  --vocab .devdeps/ds4-vocab.gguf -o "$m" > /dev/null || exit 1
port=18091
failed=0
for mode in ${MODES:-plain san}; do
  pre=()
  [[ $mode == san ]] && pre=(compute-sanitizer --tool memcheck --print-limit 3)
  log=$out/sanitize-server-$mode.log
  "${pre[@]}" build-dev/bin/ds4-server -m "$m" --backend cuda --port $port --ctx 4096 \
    --parallel 32 > "$log" 2>&1 &
  pid=$!
  python3 tools/cuda/server_drive.py health "http://127.0.0.1:$port" "$pid" > /dev/null ||
    { echo "$mode: the server did not come up"; tail -5 "$log"; failed=1; continue; }
  for c in ${CLIENTS:-16 32}; do
    timeout "${LOADGEN_S:-150}" build-dev/bin/ds4-loadgen --port $port -c "$c" -r 1 -n "${GEN:-128}" \
      --prompt-file .devdeps/promessi_sposi.txt --prompt-chars 6500 > "$out/sanitize-$mode-c$c.txt" 2>&1
    rc=$?
    echo "$mode: loadgen -c $c status $rc: $(sed -n 2p "$out/sanitize-$mode-c$c.txt")"
    ((rc == 0)) || failed=1
    kill -0 "$pid" 2> /dev/null || break
  done
  kill -TERM "$pid" 2> /dev/null
  wait "$pid"
  rc=$?
  echo "$mode: server exit $rc"
  if grep -q '^========= Invalid\|^========= Program hit\|ERROR SUMMARY: [1-9]' "$log"; then
    grep -m 12 '^=========' "$log"
    failed=1
  fi
done
exit $failed
