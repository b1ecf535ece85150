#!/usr/bin/env bash
# tools/cuda/run_kernel_tests.sh [--sanitize]: run on the GPU machine from the repository root (with
# the carried .devdeps prefix, GoogleTest included: tools/cuda/make_devdeps.sh gtest). Builds the
# CUDA kernel tests (backend_cuda_test, label cuda) with DS4_TESTS=ON and runs them; exit status 1
# on any failure. --sanitize runs them under compute-sanitizer's memcheck too. Logs go to $OUT
# when set.
set -euo pipefail
out=${OUT:-/tmp}
build=${BUILD_DIR:-build-dev}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
source tools/cuda/common.sh
BUILD_DIR=$build DS4_TESTS=ON ds4_build backend_cuda_test > "$out/kernel_build.log" 2>&1 || {
  tail -40 "$out/kernel_build.log"; exit 1; }
timeout 120 "$build/tests/backend_cuda_test" 2>&1 | tee "$out/backend_cuda_test.txt"
if [[ ${1:-} == --sanitize ]]; then
  timeout 300 compute-sanitizer --tool memcheck --error-exitcode 1 "$build/tests/backend_cuda_test" \
    > "$out/backend_cuda_test_memcheck.txt" 2>&1 && echo "memcheck: clean" || {
    tail -30 "$out/backend_cuda_test_memcheck.txt"; exit 1; }
fi
