#!/usr/bin/env bash
# tools/cuda/run_kernel_tests.sh [--sanitize]: run on the GPU machine from the repository root (with
# the carried .devdeps prefix; no GoogleTest there). Builds the CUDA kernel checks as a plain
# program (matmul_check: src/backend/cuda/kernels/matmul_q_test.cpp built with
# DS4_STANDALONE_TEST) and runs them: one PASS / FAIL / SKIP line per test, exit status 1 on any
# failure. --sanitize runs them under compute-sanitizer's memcheck too. Logs go to $OUT when set.
set -euo pipefail
out=${OUT:-/tmp}
build=${BUILD_DIR:-build-dev}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
source tools/cuda/common.sh
BUILD_DIR=$build ds4_build matmul_check > "$out/kernel_build.log" 2>&1 || {
  tail -40 "$out/kernel_build.log"; exit 1; }
timeout 90 "$build/bin/matmul_check" 2>&1 | tee "$out/matmul_check.txt"
if [[ ${1:-} == --sanitize ]]; then
  timeout 300 compute-sanitizer --tool memcheck --error-exitcode 1 "$build/bin/matmul_check" \
    > "$out/matmul_check_memcheck.txt" 2>&1 && echo "memcheck: clean" || {
    tail -30 "$out/matmul_check_memcheck.txt"; exit 1; }
fi
