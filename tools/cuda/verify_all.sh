#!/usr/bin/env bash
# tools/cuda/verify_all.sh [quick]: one device session's worth of checks, on the GPU machine from
# the repository root (with the carried .devdeps prefix). In order, stopping at the first failure:
#   1. the kernel checks (matmul_check: planar dots bit-exact, routing, top-k),
#   2. ds4-cuda-check on the test shapes (HF gates, CPU == CUDA bit for bit; 65,536-token long
#      context unless `quick`),
#   3. the Flash q2 file: ds4 one-shot (prefill + decode timing, GPU memory) and ds4-bench from 2k
#      to 32k context doubling (and a 128k point unless `quick`).
# Logs and CSVs under $OUT.
set -euo pipefail
out=${OUT:-/tmp}
quick=${1:-}
long=65536
[[ $quick == quick ]] && long=0
bash tools/cuda/device_check.sh "$long" > "$out/device_check.log" 2>&1 || {
  tail -40 "$out/device_check.log"; exit 1; }
grep -E "PASS|FAIL|SKIP|tests failed" "$out/device_check.log" | tail -20
tail -25 "$out/cuda_check.txt"
# The REPL path with --backend cuda (stdin piped: two turns, /ctx, /save): its text must equal the
# CPU backend's, the two backends being bit-identical (timing lines dropped).
repl() {
  printf 'Write a story\n/ctx 512\nAnd another one\n/save %s/repl-%s.dsv4\n/quit\n' "$out" "$1" |
    build-dev/bin/ds4 -m /dev/shm/ds4-models/tiny-q2.gguf --backend "$1" --temp 0 --nothink \
      -n 64 --ctx 2048 2>&1 | grep -v ' t/s' | sed "s/repl-$1/repl-X/" > "$out/repl-$1.txt"
}
repl cpu && repl cuda
if cmp -s "$out/repl-cpu.txt" "$out/repl-cuda.txt" &&
  cmp -s "$out/repl-cpu.dsv4" "$out/repl-cuda.dsv4"; then
  echo "REPL: cuda transcript and snapshot identical to cpu"
else
  echo "REPL: cuda differs from cpu"; diff "$out/repl-cpu.txt" "$out/repl-cuda.txt" | head; exit 1
fi
bash tools/cuda/flash_run.sh 32 > "$out/flash_run.log" 2>&1 || { tail -20 "$out/flash_run.log"; exit 1; }
tail -4 "$out/flash_run.log"
STEP_MUL=2 bash tools/cuda/flash_bench.sh 32768 16 > "$out/flash_bench.log" 2>&1 || true
tail -12 "$out/flash_bench.log"
if [[ $quick != quick ]]; then
  OUT_CSV=flash_q2_cuda_128k.csv CTX_START=131072 bash tools/cuda/flash_bench.sh 131072 16 \
    > "$out/flash_bench_128k.log" 2>&1 || true
  tail -6 "$out/flash_bench_128k.log"
fi
