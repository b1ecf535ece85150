#!/usr/bin/env bash
# tools/cuda/kv_save_bench.sh: issue 55 item 4 on the GPU machine, from the repository root
# (.devdeps carried): ds4-kvc-bench's session mode on the Flash q2 file with --backend cuda, a
# TOKENS-token session (default 29,000: ~420 MB, the session) imported, exported, written
# to and read from /dev/shm, and restarted (read + import + one token), REPS times (default 5);
# then the file-only figures (the same size, no engine) for the host side alone. MODEL names
# another model file (a test shape, say, where the Flash file does not fit the GPU).
set -uo pipefail
out=${OUT:-/tmp}
source tools/cuda/common.sh
ds4_build ds4-kvc-bench ds4-gguf > "$out/kvsave-build.log" 2>&1 || { tail -30 "$out/kvsave-build.log"; exit 1; }
model=${MODEL:-$DS4_FLASH}
[[ -n ${MODEL:-} ]] || ds4_flash_model > /dev/null
build-dev/bin/ds4-kvc-bench --model "$model" --backend cuda --tokens "${TOKENS:-29000}" \
  --reps "${REPS:-5}" --dir /dev/shm
build-dev/bin/ds4-kvc-bench --mb 420 --tokens "${TOKENS:-29000}" --reps "${REPS:-5}" --dir /dev/shm
