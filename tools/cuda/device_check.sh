#!/usr/bin/env bash
# tools/cuda/device_check.sh [LONG_TOKENS]: run on the GPU machine from the repository root (with
# the carried .devdeps prefix): builds with CUDA, synthesizes the test models into /dev/shm, runs
# the kernel checks and ds4-cuda-check. Output goes to $OUT when set.
set -euo pipefail
long=${1:-0}
out=${OUT:-/tmp}
jobs=$(nproc)
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DDS4_CUDA=ON -DCUDA_ARCH=90 \
  -DDS4_BUILD_TESTS=OFF -DDS4_BUILD_BENCH=OFF -DCMAKE_PREFIX_PATH="$PWD/.devdeps" \
  -DCMAKE_CXX_FLAGS="-I$PWD/.devdeps/include" > "$out/cmake.log"
ninja -C build-dev -j "$jobs" ds4-gguf ds4-cuda-check ds4 ds4-bench matmul_check > "$out/build.log" 2>&1 || {
  tail -40 "$out/build.log"; exit 1; }
m=/dev/shm/ds4-models
mkdir -p "$m"
for spec in tiny:f32 tiny:f16 tiny:q8 tiny:q2 tiny:q4 small:f32 small:q2; do
  shape=${spec%:*} recipe=${spec#*:}
  [[ -s $m/$shape-$recipe.gguf ]] || build-dev/bin/ds4-gguf synth --shape "$shape" --quant "$recipe" \
    --seed 1 --vocab .devdeps/ds4-vocab.gguf -o "$m/$shape-$recipe.gguf" > /dev/null
done
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
if [[ -x build-dev/bin/matmul_check ]]; then build-dev/bin/matmul_check | tail -20; fi
build-dev/bin/ds4-cuda-check "$m" tests/data/reference "$long" 2>&1 | tee "$out/cuda_check.txt"
