#!/usr/bin/env bash
# tools/cuda/flash_run.sh: full-scale run on the GPU machine (repository root, .devdeps carried):
# synthesizes the Flash q2 file (published layout, 86.7 GB) into /dev/shm, loads it with the CUDA
# backend (weights uploaded to the GPU) and answers a ~2k-token prompt with ds4, recording the
# timing line and GPU memory. Output under $OUT.
set -euo pipefail
out=${OUT:-/tmp}
gen=${1:-32}
source tools/cuda/common.sh
ds4_build ds4-gguf ds4 > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
model=$DS4_FLASH
ds4_flash_model | tail -1
ls -la "$model"
# A ~2k-token prompt from the repository's own docs.
cat docs/engine.md docs/cli.md docs/gguf.md docs/quant.md | head -c 9000 > /tmp/prompt.txt
nvidia-smi --query-gpu=memory.used --format=csv,noheader -l 2 > "$out/gpu_mem.log" &
smi=$!
DS4_CUDA_GRAPH_STATS=1 /usr/bin/time -f "ds4 wall %e s, max RSS %M KB" build-dev/bin/ds4 -m "$model" --backend cuda \
  --prompt-file /tmp/prompt.txt -n "$gen" --nothink --temp 0 --ctx 4096 --prefill-chunk 2048 \
  > "$out/flash_out.txt" 2> "$out/flash_err.txt" || true
kill $smi || true
tail -5 "$out/flash_err.txt"
echo "GPU memory used (MiB), max: $(sort -n "$out/gpu_mem.log" | tail -1)"
