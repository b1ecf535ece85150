#!/usr/bin/env bash
# tools/cuda/verify_all.sh [STEPS]: one device session's worth of checks, on the GPU machine from
# the repository root (with the carried .devdeps prefix). STEPS is a comma list of
#   gtest    every GoogleTest case of label cuda (ctest -L cuda in build-dev, its fixtures making
#            the vocabulary and the test models there): the kernel tests (backend_cuda_test) and
#            model_cuda_test (the HF gates on CUDA, CPU vs CUDA on the quantized recipes, with and
#            without cuBLAS, the decode paths, an 8,192-token long context, batched sessions);
#            every case must pass or skip for its stated reason (ctest's log and JUnit file in
#            the logs). The steps below run parts of it:
#   kernels  backend_cuda_test (planar dots bit-exact, cuBLAS products within tolerance,
#            routing, top-k, attention)
#   spectest model_cuda_test's CudaBackend and CudaSessionState cases: batched sessions,
#            speculative verification, a session's state saved and loaded on CUDA
#   spec     ds4-bench --spec-replay 2,3,4,5 on Flash q2 at 2k and 8k, GEN_TOKENS (default 64)
#            per frontier: plain decode beside verification of N drafts per step, every draft the
#            model's own token (issue 51's replay mode), and --mtp with a synthesized Flash MTP
#            file (MTP_DRAFT drafts, default 2): the draft + verify step's time, and each N's mtp
#            replay (drafting paid, the probe verified); tools/cuda/mtp_table.py turns them into
#            bench/mtp.md's table (mtp_table.md in the logs)
#   quantized model_cuda_test's CudaQuantizedFile case: files written by ds4-gguf quantize (small
#            q2, tiny q2 with its last layer at q4, from decisive f32 files) load on CUDA and hold
#            the quantized gates against the CPU (issue 53)
#   steering model_cuda_test's CudaSteering and CudaObserver cases: steering on CUDA against the
#            CPU (prefill, one-row decode steps on graphs, a batched step of two scales; issue 54)
#            and what an observer sees on both (expert inputs, sublayer outputs; issue 53)
#   mtpsame  ds4 --backend cuda on Flash q2, greedy, with and without --mtp (2 drafts, margin 0):
#            the outputs must be byte-identical (tools/cuda/mtp_same.sh)
#   check    the gates of model_cuda_test on the test shapes (HF gates, CPU vs CUDA within
#            tolerance, decode paths), prefill F16 / F32 products on cuBLAS
#   checkblas the same gates with those products on the FP64 tensor-core kernel
#            (EngineOptions::cuda_blas = false)
#   long     the long-context case at LONG_TOKENS (default 65,536) tokens
#   repl     the REPL path with --backend cuda against the CPU backend (transcript + snapshot)
#   flash    the Flash q2 file: ds4 one-shot (prefill + decode timing, GPU memory)
#   bench    ds4-bench on Flash q2 from 2k to 32k context, doubling
#   bench128 one ds4-bench point at 128k
#   profile  per-kernel GPU times (ncu) of a Flash q2 prefill and 4 decoded tokens
#   profdec  per-kernel GPU times (ncu) of 2 Flash q2 decoded tokens at ~2k context
#   profver  per-kernel GPU times (ncu) of one 3-row speculative verification (ds4 --mtp) at ~2k
#   profchunk per-kernel GPU times (ncu) of the 2048-row prefill chunk at 6,144 (up to 8k context)
#   fill     ncu sections (speed of light, warp stalls, occupancy) of the first heavy prefill
#            kernels (tensor-core and float products, HC pre-step, attention)
#   fillchunk fill's sections for the chunk at 6,144 (profchunk's run; KREGEX, KERNELS)
#   filldec  fill's sections for the decode kernels that bound latency (HC pre-step, attention,
#            routing, IQ2_XXS rows) in profdec's run
#   deep     profdec with DRAM bytes, instructions and shared-memory wavefronts per launch
#   graphs   Flash q2 decode at 2k and 8k with CUDA graphs off (DS4_CUDA_GRAPHS=0) and on, side
#            by side, and the probes' tokens compared
#   gseg     the same with CUDA graphs on, cut every 2 or every 8 sublayers
#            (DS4_CUDA_GRAPH_SEGMENT=2 and 8)
#   chunk    the same with 512- and 2048-row prefill chunks (CHUNK; the probes must agree: the
#            chunk size does not change results)
#   chunk4k  the same with 1024- and 4096-row prefill chunks
#   chunk24  the same with 2048- and 4096-row prefill chunks
#   ds4bench ds4's own ds4-bench (its public source from .devdeps/ds4src, built here for sm_90,
#            outside the repository) on the same Flash q2 file and prompt, 2k to 32k doubling,
#            GEN_TOKENS (default 64) per frontier, beside `bench` (which then also generates
#            GEN_TOKENS): the side-by-side ratio of bench/h200.md
#   sass     the kernels' SASS (cuobjdump) and, per kernel, how often each opcode occurs
#   server   ds4-server --backend cuda on the Flash q2 file (tools/cuda/server_bench.sh, SERVER
#            scenarios, default all): bench/server.md's streaming, tool-call, Claude Code and
#            disk KV cache figures
#   bench256 one ds4-bench point at 256k (262,144-token frontier)
#   multi    ds4-bench --sessions 1,2,4,8,16,32 on Flash q2: N sessions at 2,048 tokens decode
#            GEN_TOKENS (default 32) steps together (the engine side of bench/serving.md)
#   multispec ds4-bench --sessions 1,2,4,8 (MULTI) --spec-replay 2,3 (SPEC): N sessions at 2,048
#            tokens decode GEN_TOKENS (default 32) steps together, then replay their probes with
#            K rows per session and step (batched verification at acceptance 100%): where drafting
#            stops paying as the batch grows (issue 51, bench/mtp.md)
#   multiab  multi's steps (MULTI, GEN_TOKENS) plainly, once with each VAR=VALUE of MULTI_AB (a
#            space-separated list of the engine's A/B switches), then plainly again: the A/B and
#            a repeated baseline in one call (multiab-K.csv in the logs, K in that order)
#   multipicks multi's steps with DS4_CUDA_PICKS=0 (logits downloaded, picks on the host): the A/B
#            of the device picks (Engine::pick) beside `multi` (MULTI and GEN_TOKENS alike)
#   fillmulti fill's sections (speed of light, warp stalls, occupancy) for the routed-expert rows
#            and dense Q8_0 tensor-core kernels of profmulti's step (KREGEX, KERNELS)
#   profmulti per-kernel GPU times (ncu) of one decode step of SESSIONS (default 16) sessions
#   opcost   what each backend op costs in place in a Flash q2 decode step at 2k: ds4-bench with
#            each op's work issued twice per call (--repeat-op; OPS, default hc_pre, hc_post, moe,
#            matmul, rms_norm, output_head) against a run without, GEN_TOKENS (default 64)
#            tokens each: ms per token added (the op's cost beside its neighbours, which ncu's
#            one-kernel-at-a-time times do not show); with SESSIONS=N, steps of N sessions at 2k
#            instead (ds4-bench --sessions N): ms per step added. An OPS item matmul:TYPE:ROWS
#            repeats only the products of that weight type and output rows (q8_0:4096: the
#            attention output's second projection)
#   abold    the Flash A/B (prefill and decode at 2k and 8k, or AB_CTX) of the working tree against
#            the files under .devdeps/old swapped in (a rewrite without a switch; probes compared)
#   serving  concurrent streams through ds4-server --backend cuda (tools/cuda/serving_bench.sh:
#            ds4-loadgen at 1, 4, 16 and 32 clients; bench/serving.md)
#   servingab serving's loadgen at CLIENTS (default 16) twice on one server build: plainly and
#            with the environment assignment SERVING_AB (VAR=VALUE, an A/B switch of the
#            server) set; each run's files under serving-plain/ and serving-ab/ in the logs
#   longprompt a ~48k-token prompt beside 4 decoding clients, --itl-target-ms 100 and 0
#            (tools/cuda/long_prompt_bench.sh; issue 55, bench/serving.md)
#   kvsave   a 29k-token Flash q2 session saved to and loaded from /dev/shm on CUDA, step by step
#            (tools/cuda/kv_save_bench.sh: ds4-kvc-bench --model; issue 55 item 4, bench/kvcache.md)
#   agent    ds4-agent on Flash q2 (tools/cuda/agent_bench.sh): startup with and without the system
#            prompt's checkpoint, first tokens, a ~32k-token message's prefill rate beside
#            ds4-bench's at that frontier, /save, /switch and a rebuild from text (bench/agent.md)
#   power    --power 100 / 70 / 50 / 30 on Flash q2: a 32k prefill and ~60 s of decode each, GPU
#            utilisation and power draw sampled every 100 ms (tools/cuda/power_bench.sh;
#            bench/power.md, issue 54)
#   sanserve ds4-server --backend cuda on the small test shape at 16 and 32 concurrent streams,
#            plainly and under compute-sanitizer memcheck (tools/cuda/serve_sanitize.sh)
# (default: gtest,repl). Every step runs under its own time limit, cut to
# what is left of DEADLINE seconds (default 560) since the start, and a failing step does not
# stop the others; a summary line per step ends the output and the exit status is 1 when any
# step failed. Logs and CSVs go to a work folder packed into $OUT/logs.tgz at the end (the device
# tool brings back only a few files).
set -uo pipefail
out=/tmp/verify-out
rm -rf "$out" && mkdir -p "$out"
deadline=${DEADLINE:-560}
finish() {
  echo "== summary"
  printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
  [[ -n ${OUT:-} ]] && tar -C "$out" -czf "$OUT/logs.tgz" .
  exit $failed
}
steps=${1:-gtest,repl}
has() { [[ ",$steps," == *",$1,"* ]]; }
summary=()
failed=0
# step NAME SECONDS COMMAND...: runs COMMAND with a limit, its output into $out/NAME.log.
step() {
  local name=$1 limit=$2 t0=$SECONDS rc
  shift 2
  ((limit > deadline - SECONDS)) && limit=$((deadline - SECONDS))
  if ((limit < 15)); then summary+=("$(printf '%-9s skipped (no time left)' "$name")"); return 1; fi
  timeout "$limit" bash -c '"$@"' step "$@" > "$out/$name.log" 2>&1
  rc=$?
  summary+=("$(printf '%-9s rc=%-3d %4d s' "$name" "$rc" $((SECONDS - t0)))")
  if ((rc != 0)); then
    failed=1
    echo "== $name failed (rc $rc):"
    tail -25 "$out/$name.log"
  fi
  return $rc
}

# The REPL's model file (the cuda tests' files come from their ctest fixture).
models() {
  mkdir -p "$m"
  [[ -s $m/tiny-q2.gguf ]] || build-dev/bin/ds4-gguf synth --shape tiny --quant q2 --seed 1 \
    --vocab .devdeps/ds4-vocab.gguf -o "$m/tiny-q2.gguf"
}
# The REPL path with --backend cuda (stdin piped: two turns, /ctx, /save) beside the CPU
# backend's. The backends agree within tolerances, not bit for bit, and the random-weight model's
# near-tied logits let greedy answers differ, so the answers are not compared: the command lines
# must be the same, each answer non-empty, and the snapshot CUDA saved must load in a CPU REPL and
# take a turn there.
repl_one() {
  printf 'Write a story\n/ctx 512\nAnd another one\n/save %s/repl-%s.dsv4\n/quit\n' "$out" "$1" |
    build-dev/bin/ds4 -m "$m/tiny-q2.gguf" --backend "$1" --temp 0 --nothink -n 64 --ctx 2048 \
      2>&1 | grep -v ' t/s' | sed "s/repl-$1/repl-X/" > "$out/repl-$1.txt"
}
repl() {
  repl_one cpu && repl_one cuda || return 1
  local side
  for side in cpu cuda; do
    # Prompts ("ds4> ") dropped; the command lines kept; every other non-empty line is an answer.
    sed -E 's/^(ds4> ?)+//' "$out/repl-$side.txt" > "$out/repl-$side.plain"
    grep -E '^(ds4: |saved |Commands:|  /)' "$out/repl-$side.plain" > "$out/repl-$side.cmds"
    (($(grep -vcE '^(ds4: |saved |Commands:|  /|$)' "$out/repl-$side.plain") >= 2)) ||
      { echo "$side: an empty answer"; return 1; }
  done
  cmp "$out/repl-cpu.cmds" "$out/repl-cuda.cmds" ||
    { diff "$out/repl-cpu.cmds" "$out/repl-cuda.cmds" | head; return 1; }
  printf '/load %s/repl-cuda.dsv4\nAnd one more\n/quit\n' "$out" |
    build-dev/bin/ds4 -m "$m/tiny-q2.gguf" --backend cpu --temp 0 --nothink -n 16 --ctx 512 \
      > "$out/repl-load.txt" 2>&1 || { tail -5 "$out/repl-load.txt"; return 1; }
  grep -qiE 'error|cannot|failed' "$out/repl-load.txt" && { tail -5 "$out/repl-load.txt"; return 1; }
  echo "REPL: cuda's commands as cpu's, every answer non-empty; cuda's snapshot loads on cpu"
}
# Steps run in a child shell under `timeout`: the step functions and their variables go along.
source tools/cuda/common.sh
export out m=/dev/shm/ds4-models DS4_FLASH DS4_FLASH_MTP
export -f ds4_build ds4_flash_model ds4_flash_mtp models repl_one repl

# ds4 (the oracle) builds in the background beside ours when ds4bench runs.
if has ds4bench; then
  rm -rf /dev/shm/ds4src && cp -r .devdeps/ds4src /dev/shm/ds4src
  (cd /dev/shm/ds4src && make -j8 ds4-bench CUDA_ARCH=sm_90 > "$out/ds4-build.log" 2>&1
    echo "ds4-bench build rc $?" >> "$out/ds4-build.log") &
fi
# One build (build-dev) for every step. With GoogleTest carried in .devdeps it has the test
# targets too (DS4_TESTS=ON, exported so that the scripts the steps start configure it alike).
[[ -d .devdeps/include/gtest ]] && export DS4_TESTS=ON
targets=(ds4-gguf ds4 ds4-bench)
has server && targets+=(ds4-server)
tests_needed=0
for s in kernels spectest quantized steering check checkblas long gtest; do has $s && tests_needed=1; done
if ((tests_needed)); then
  if [[ ${DS4_TESTS:-} != ON ]]; then
    echo "the test steps need GoogleTest in .devdeps (tools/cuda/make_devdeps.sh gtest)"
    failed=1
    finish
  fi
  targets+=(backend_cuda_test model_cuda_test)
fi
step build 400 ds4_build "${targets[@]}" || finish
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
has repl && step models 120 models
# cuda_ctest NAME CTEST_ARGS...: the cuda-labelled GoogleTest cases that CTEST_ARGS select, their
# fixtures first (the vocabulary copied from .devdeps, the test models synthesized); ctest's full
# log and a JUnit file (every case's result, skip reasons included) beside NAME's log.
cuda_ctest() {
  local name=$1
  shift
  ctest --test-dir build-dev -L cuda -j "${CTEST_JOBS:-4}" --output-on-failure \
    --output-log "$out/$name-ctest.log" --output-junit "$out/$name.xml" "$@"
}
export -f cuda_ctest
has gtest && step gtest 500 cuda_ctest gtest && tail -12 "$out/gtest.log"
has kernels && step kernels 120 build-dev/tests/backend_cuda_test && tail -3 "$out/kernels.log"
has spectest && step spectest 300 cuda_ctest spectest -R 'CudaBackend|CudaSessionState' &&
  tail -12 "$out/spectest.log"
has quantized && step quantized 300 cuda_ctest quantized -R 'CudaQuantizedFile' &&
  tail -12 "$out/quantized.log"
has steering && step steering 300 cuda_ctest steering -R 'CudaSteering|CudaObserver' &&
  tail -12 "$out/steering.log"
has check && step check 400 cuda_ctest check -R 'CudaHuggingFace|CudaVsCpu|CudaDecode' \
  -E nocublas && tail -12 "$out/check.log"
has checkblas && step checkblas 400 cuda_ctest checkblas -R nocublas &&
  tail -12 "$out/checkblas.log"
has long && DS4_TEST_LONG_TOKENS=${LONG_TOKENS:-65536} step long 500 cuda_ctest long \
  -R CudaLongContext && tail -4 "$out/long.log"
has repl && step repl 120 repl && tail -1 "$out/repl.log"
# The SASS of every kernel object, and an opcode histogram per kernel (sass/<file>.hist).
sass() {
  local o name
  mkdir -p "$out/sass"
  for o in build-dev/src/backend/CMakeFiles/ds4_backend_cuda.dir/cuda/kernels/*.o; do
    name=$(basename "$o" .cu.o)
    "$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)" -sass "$o" > "$out/sass/$name.sass" || return 1
    awk '/Function :/ { f = $3 } /^ +\/\*[0-9a-f]+\*\/ / { op = $2; if (op ~ /^@/) op = $3;
      sub(/;$/, "", op); n[f " " op]++ } END { for (k in n) print n[k], k }' \
      "$out/sass/$name.sass" | sort -k2,2 -k1,1nr > "$out/sass/$name.hist"
  done
  ls -l "$out/sass"
}
export -f sass
has sass && step sass 60 sass && tail -3 "$out/sass.log"
# Every step but the test-model ones runs on the Flash q2 file.
needs_flash=0
for s in ${steps//,/ }; do
  case $s in
    kernels | spectest | check | checkblas | long | repl | sass | gtest | sanserve) ;;
    *) needs_flash=1 ;;
  esac
done
if ((needs_flash)); then
  step synth 200 ds4_flash_model
fi
if has flash; then
  OUT=$out step flash 300 bash tools/cuda/flash_run.sh 32
  tail -5 "$out/flash.log"
fi
if has bench; then
  OUT=$out STEP_MUL=2 step bench 500 bash tools/cuda/flash_bench.sh 32768 "${GEN_TOKENS:-16}"
  tail -14 "$out/bench.log"
fi
if has spec; then
  step mtpfile 200 ds4_flash_mtp
  OUT=$out OUT_CSV=flash_q2_spec.csv STEP_MUL=4 SPEC=${SPEC:-2,3,4,5} MTP=$DS4_FLASH_MTP \
    step spec 500 bash tools/cuda/flash_bench.sh 8192 "${GEN_TOKENS:-64}"
  grep -h "replay of\|mtp decode\|gen [0-9]* tokens" "$out/bench_err.txt"
  python3 tools/cuda/mtp_table.py "$out/bench_err.txt" | tee "$out/mtp_table.md"
fi
if has mtpsame; then
  OUT=$out step mtpsame 300 bash tools/cuda/mtp_same.sh "${GEN_TOKENS:-64}"
  tail -4 "$out/mtpsame.log"
fi
if has bench128; then
  OUT=$out OUT_CSV=flash_q2_cuda_128k.csv CTX_START=131072 step bench128 500 \
    bash tools/cuda/flash_bench.sh 131072 16
  tail -4 "$out/bench128.log"
fi
if has serving; then
  OUT=$out step serving 400 bash tools/cuda/serving_bench.sh
  tail -30 "$out/serving.log"
fi
# serving_ab: serving_bench.sh plainly, then with $SERVING_AB in the environment.
serving_ab() {
  [[ ${SERVING_AB:-} == *=* ]] || { echo "servingab: SERVING_AB=VAR=VALUE is required"; return 1; }
  mkdir -p "$out/serving-plain" "$out/serving-ab"
  CLIENTS=${CLIENTS:-16} OUT=$out/serving-plain bash tools/cuda/serving_bench.sh || return 1
  env "$SERVING_AB" CLIENTS=${CLIENTS:-16} OUT=$out/serving-ab bash tools/cuda/serving_bench.sh
}
export -f serving_ab
if has servingab; then
  step servingab 500 serving_ab
  tail -6 "$out/servingab.log"
fi
if has kvsave; then
  OUT=$out step kvsave 400 bash tools/cuda/kv_save_bench.sh
  tail -20 "$out/kvsave.log"
fi
if has longprompt; then
  OUT=$out step longprompt 560 bash tools/cuda/long_prompt_bench.sh
  tail -12 "$out/longprompt.log"
fi
if has agent; then
  OUT=$out step agent 560 bash tools/cuda/agent_bench.sh
  tail -40 "$out/agent.log"
fi
if has power; then
  OUT=$out/power step power 580 bash tools/cuda/power_bench.sh
  tail -12 "$out/power.log"
fi
if has sanserve; then
  OUT=$out step sanserve 400 bash tools/cuda/serve_sanitize.sh
  tail -12 "$out/sanserve.log"
fi
if has bench256; then
  OUT=$out OUT_CSV=flash_q2_cuda_256k.csv CTX_START=262144 step bench256 500 \
    bash tools/cuda/flash_bench.sh 262144 16
  tail -4 "$out/bench256.log"
fi
if has server; then
  OUT=$out step server 400 bash tools/cuda/server_bench.sh "${SERVER:-chat,toolrt,claude,kvc}"
  tail -40 "$out/server.log"
fi
# ab_side NAME TAG: the Flash q2 bench at 2k and 8k (AB_CTX: 2k and that frontier) into
# NAME$TAG.csv, its greedy probes into NAME-probes$TAG.txt.
ab_side() {
  local ctx=${AB_CTX:-8192}
  OUT="$out" OUT_CSV="$1$2.csv" bash tools/cuda/flash_bench.sh "$ctx" 32 $((ctx - 2048)) || return 1
  grep -h "^probe" "$out/bench_err.txt" > "$out/$1-probes$2.txt"
}
# ab_report NAME TAG0 TAG1 LABEL0 LABEL1: the two sides' prefill and decode side by side, and
# whether their probes agree (the status: 1 when they differ).
ab_report() {
  echo "frontier prefill_tps gen_tps ($4) prefill_tps gen_tps ($5)"
  paste -d' ' <(cut -d, -f1,4,7 "$out/$1$2.csv" | tr , ' ') \
    <(cut -d, -f4,7 "$out/$1$3.csv" | tr , ' ') | tail -2
  if cmp -s "$out/$1-probes$2.txt" "$out/$1-probes$3.txt"; then
    echo "$1: probes identical with $4 and $5"
  else
    echo "$1: probes differ with $4 and $5"
    return 1
  fi
}
export -f ab_side ab_report
# ab NAME VAR [A B [any]]: the Flash q2 bench at 2k and 8k with VAR=A and VAR=B (default 0 and 1),
# side by side; the greedy probes must agree (with `any`: they are compared, not required to).
ab() {
  local name=$1 var=$2 v0=${3:-0} v1=${4:-1} any=${5:-} v
  for v in "$v0" "$v1"; do
    (export "$var=$v" && ab_side "$name" "$v") || return 1
  done
  ab_report "$name" "$v0" "$v1" "$var=$v0" "$var=$v1" || [[ $any == any ]]
}
export -f ab
# abold NAME: the same bench on the working tree and with the files under .devdeps/old (paths from
# the repository root: the code before a rewrite that has no switch) swapped in, then restored;
# the probes are compared, not required to agree.
abold() {
  local name=$1 f keep=/tmp/abold-keep
  ab_side "$name" new || return 1
  rm -rf "$keep" && mkdir -p "$keep"
  (cd .devdeps/old && find . -type f) > "$out/$name-files.txt"
  while read -r f; do
    mkdir -p "$keep/$(dirname "$f")" && cp "$f" "$keep/$f" && cp ".devdeps/old/$f" "$f"
  done < "$out/$name-files.txt"
  ab_side "$name" old
  local rc=$?
  while read -r f; do cp "$keep/$f" "$f"; done < "$out/$name-files.txt"
  ((rc == 0)) || return 1
  ab_report "$name" old new old new || true
}
export -f abold
has abold && step abold 400 abold abold && tail -4 "$out/abold.log"
# opcost: one ds4-bench run per op (and one without), the decode tokens/s of each, and the ms per
# token the doubled op adds.
opcost() {
  local op base=
  ds4_build ds4-bench > "$out/opcost-build.log" 2>&1 || return 1
  echo "op,gen_tps,ms_per_token,added_ms_per_token"
  for op in none ${OPS:-hc_pre hc_post moe matmul rms_norm output_head}; do
    local extra=()
    [[ $op != none ]] && extra=(--repeat-op "$op")
    if [[ -n ${SESSIONS:-} ]]; then
      extra+=(--sessions "$SESSIONS" -n "${GEN_TOKENS:-32}")
    else
      extra+=(--ctx-max 2048 --gen-tokens "${GEN_TOKENS:-64}")
    fi
    build-dev/bin/ds4-bench -m "$DS4_FLASH" --backend cuda --prompt-file .devdeps/promessi_sposi.txt \
      --ctx-start 2048 "${extra[@]}" --csv "$out/opcost-$op.csv" 2> "$out/opcost-$op.err" ||
      return 1
    local tps
    if [[ -n ${SESSIONS:-} ]]; then  # steps per second from the p50 step (ms)
      tps=$(tail -1 "$out/opcost-$op.csv" | awk -F, '{ printf "%.4f", 1000 / $6 }')
    else
      tps=$(tail -1 "$out/opcost-$op.csv" | cut -d, -f7)
    fi
    [[ -z $base ]] && base=$tps
    awk -v op="$op" -v t="$tps" -v b="$base" \
      'BEGIN { printf "%s,%.2f,%.3f,%.3f\n", op, t, 1000 / t, 1000 / t - 1000 / b }'
  done
}
export -f opcost
has opcost && step opcost 400 opcost && cat "$out/opcost.log"
has graphs && step graphs 400 ab graphs DS4_CUDA_GRAPHS && tail -4 "$out/graphs.log"
has gseg && DS4_CUDA_GRAPHS=1 step gseg 400 ab gseg DS4_CUDA_GRAPH_SEGMENT 2 8 &&
  tail -4 "$out/gseg.log"
has chunk && step chunk 400 ab chunk CHUNK 512 2048 && tail -4 "$out/chunk.log"
has chunk4k && step chunk4k 400 ab chunk4k CHUNK 1024 4096 && tail -4 "$out/chunk4k.log"
has chunk24 && step chunk24 400 ab chunk24 CHUNK 2048 4096 && tail -4 "$out/chunk24.log"
ds4bench() {
  # The background build (started by the parent shell) ends with its rc line.
  until grep -q "build rc" "$out/ds4-build.log" 2>/dev/null; do sleep 2; done
  tail -2 "$out/ds4-build.log"
  [[ -x /dev/shm/ds4src/ds4-bench ]] || return 1
  # DS4_CUDA_COPY_MODEL=1: ds4 copies the whole file into GPU memory (ds4_gpu_set_model_map); by
  # default it registers the host mapping for device access and reads the weights over PCIe
  # (a small fraction of the speed; DS4_CUDA_COPY_MODEL_CHUNKED does not reach that path).
  DS4_CUDA_COPY_MODEL=1 /dev/shm/ds4src/ds4-bench -m "$DS4_FLASH" --cuda --prompt-file .devdeps/promessi_sposi.txt \
    --ctx-start 2048 --ctx-max 32768 --step-mul 2 --gen-tokens "${GEN_TOKENS:-64}" \
    --csv "$out/ds4_bench.csv" 2> "$out/ds4_bench_err.txt"
  cat "$out/ds4_bench.csv"
}
export -f ds4bench
has ds4bench && step ds4bench 500 ds4bench && tail -8 "$out/ds4bench.log"
if has profile; then
  OUT=$out step profile 300 bash tools/cuda/profile_flash.sh
  tail -3 "$out/profile.log"
fi
if has multispec; then
  step multispec 400 build-dev/bin/ds4-bench -m "$DS4_FLASH" --backend cuda \
    --prompt-file .devdeps/promessi_sposi.txt --sessions "${MULTI:-1,2,4,8}" --ctx-start 2048 \
    -n "${GEN_TOKENS:-32}" --spec-replay "${SPEC:-2,3}" --csv "$out/multispec.csv"
  grep "sessions at" "$out/multispec.log"
fi
# multi_run CSV SESSIONS STEPS [VAR=VALUE]: ds4-bench's engine steps of SESSIONS (a comma list)
# sessions at 2,048 tokens on Flash q2, STEPS each, into CSV; with VAR=VALUE in the environment.
multi_run() {
  env ${4:+"$4"} build-dev/bin/ds4-bench -m "$DS4_FLASH" --backend cuda \
    --prompt-file .devdeps/promessi_sposi.txt --sessions "$2" --ctx-start 2048 -n "$3" --csv "$1"
}
export -f multi_run
if has multi; then
  step multi 400 multi_run "$out/multi.csv" "${MULTI:-1,2,4,8,16,32}" "${GEN_TOKENS:-32}"
  tail -8 "$out/multi.log"; cat "$out/multi.csv"
fi
# multi_with VAR VALUE: multi's engine steps with VAR=VALUE.
multi_with() {
  multi_run "$out/multi_$1_$2.csv" "${MULTI:-4,8,16,32}" "${GEN_TOKENS:-16}" "$1=$2" &&
    cat "$out/multi_$1_$2.csv"
}
export -f multi_with
# multi_ab: multi's steps plainly, with each switch of MULTI_AB, and plainly again.
multi_ab() {
  local k=0 ab
  for ab in "" ${MULTI_AB:-} ""; do
    k=$((k + 1))
    multi_run "$out/multiab-$k.csv" "${MULTI:-1,4,8,16,32}" "${GEN_TOKENS:-32}" "$ab" || return 1
    echo "== ${ab:-plain}"
    cut -d, -f1,6,7 "$out/multiab-$k.csv"
  done
}
export -f multi_ab
has multiab && step multiab 500 multi_ab && cat "$out/multiab.log"
has multipicks && step multipicks 300 multi_with DS4_CUDA_PICKS 0 && tail -6 "$out/multipicks.log"
if has fillmulti; then
  OUT=$out step fillmulti 300 bash tools/cuda/profile_flash.sh fillmulti
  tail -3 "$out/fillmulti.log"
fi
if has profmulti; then
  OUT=$out step profmulti 300 bash tools/cuda/profile_flash.sh multi
  tail -3 "$out/profmulti.log"
fi
if has profdec; then
  OUT=$out step profdec 300 bash tools/cuda/profile_flash.sh decode
  tail -3 "$out/profdec.log"
fi
if has profver; then
  ds4_flash_mtp > /dev/null
  OUT=$out step profver 300 bash tools/cuda/profile_flash.sh verify
  tail -3 "$out/profver.log"
fi
if has profchunk; then
  OUT=$out step profchunk 300 bash tools/cuda/profile_flash.sh chunk
  tail -3 "$out/profchunk.log"
fi
if has fill; then
  OUT=$out step fill 300 bash tools/cuda/profile_flash.sh fill
  tail -3 "$out/fill.log"
fi
if has fillchunk; then
  OUT=$out step fillchunk 300 bash tools/cuda/profile_flash.sh fillchunk
  tail -3 "$out/fillchunk.log"
fi
if has filldec; then
  OUT=$out step filldec 300 bash tools/cuda/profile_flash.sh filldec
fi
if has deep; then
  OUT=$out step deep 300 bash tools/cuda/profile_flash.sh deep
  tail -3 "$out/deep.log"
fi
finish
