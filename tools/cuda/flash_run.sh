#!/usr/bin/env bash
# tools/cuda/flash_run.sh: full-scale run on the GPU machine (repository root, .devdeps carried):
# synthesizes the Flash q2 file (published layout, 86.7 GB) into /dev/shm, loads it with the CUDA
# backend (weights uploaded to the GPU) and answers a ~2k-token prompt with ds4, recording the
# timing line and GPU memory. Output under $OUT.
set -euo pipefail
out=${OUT:-/tmp}
gen=${1:-32}
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DDS4_CUDA=ON -DCUDA_ARCH=90 \
  -DDS4_BUILD_TESTS=OFF -DDS4_BUILD_BENCH=OFF -DCMAKE_PREFIX_PATH="$PWD/.devdeps" \
  -DCMAKE_CXX_FLAGS="-I$PWD/.devdeps/include" > "$out/cmake.log"
ninja -C build-dev -j "$(nproc)" ds4-gguf ds4 > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
model=/dev/shm/flash-q2.gguf
if [[ ! -s $model ]]; then
  /usr/bin/time -f "synth %e s" build-dev/bin/ds4-gguf synth --shape flash --quant q2 --seed 1 \
    --vocab .devdeps/ds4-vocab.gguf -o "$model" 2>&1 | tail -2
fi
ls -la "$model"
# A ~2k-token prompt from the repository's own docs.
cat docs/engine.md docs/cli.md docs/gguf.md docs/quant.md | head -c 9000 > /tmp/prompt.txt
nvidia-smi --query-gpu=memory.used --format=csv,noheader -l 2 > "$out/gpu_mem.log" &
smi=$!
/usr/bin/time -f "ds4 wall %e s, max RSS %M KB" build-dev/bin/ds4 -m "$model" --backend cuda \
  --prompt-file /tmp/prompt.txt -n "$gen" --nothink --temp 0 --ctx 4096 --prefill-chunk 512 \
  > "$out/flash_out.txt" 2> "$out/flash_err.txt" || true
kill $smi || true
tail -5 "$out/flash_err.txt"
echo "GPU memory used (MiB), max: $(sort -n "$out/gpu_mem.log" | tail -1)"
