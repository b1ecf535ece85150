#!/usr/bin/env bash
# tools/compat/compat.sh STEPS: the ds4-compatibility evidence of bench/compat.md, on the GPU
# machine from the repository root, with .devdeps carried (nlohmann/CLI11 headers, the vocabulary
# GGUF, promessi_sposi.txt, and ds4's public source in .devdeps/ds4src -- an oracle that is built
# and run here, never committed). STEPS is a comma list of
#   build    our tools (CUDA, sm_90) and ds4 (`make ds4 CUDA_ARCH=sm_90`), side by side
#   synth    the Flash q2 file of the decisive law (ds4-gguf synth --decisive) in /dev/shm
#   inspect  `ds4 --inspect` (ds4's loader: metadata + tensor layout) on that file, and our check
#   hf       a checkpoint written by transformers' save_pretrained (tools/reference/
#            saved_checkpoint.py), converted by ds4-gguf convert and checked against transformers'
#            logits with ds4-ref-check on the CPU and CUDA backends
#   cpu      starts (setsid, so it outlives this call) the CPU chain: ds4 --cpu and ours --backend
#            cpu on every prompt; results in /dev/shm/compat
#   gpu      the CUDA chain: ds4 --cuda and ours --backend cuda on every prompt
#   collect  waits for the CPU chain (WAIT seconds at most) and packs /dev/shm/compat into $OUT
# Each prompt gets --dump-logits (full last-position logits and the prompt's token count) and
# --dump-logprobs (a 16-token greedy continuation with the top 128 log-probabilities per step).
set -uo pipefail
steps=${1:-build,synth,inspect}
has() { [[ ",$steps," == *",$1,"* ]]; }
work=/dev/shm/compat
model=/dev/shm/flash-q2-decisive.gguf
ds4=/dev/shm/ds4src/ds4  # built outside the carried folder, which each call replaces
ours=build-dev/bin/ds4
mkdir -p "$work"
source tools/cuda/common.sh

if has build; then
  rm -rf /dev/shm/ds4src && cp -r .devdeps/ds4src /dev/shm/ds4src
  (cd /dev/shm/ds4src && make -j8 ds4 CUDA_ARCH=sm_90 > "$work/ds4-build.log" 2>&1; echo "ds4 build rc $?") &
  ds4_build ds4-gguf ds4 ds4-ref-check > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
  echo "our build done at $SECONDS s"
  wait
  echo "ds4 built at $SECONDS s"; tail -3 "$work/ds4-build.log"
fi
if has synth; then
  [[ -s $model ]] || build-dev/bin/ds4-gguf synth --shape flash --quant q2 --seed 7 --decisive \
    --vocab .devdeps/ds4-vocab.gguf -o "$model" || exit 1
  ls -la "$model"
fi
if has inspect; then
  echo "== ds4 --inspect on our synthesized Flash q2 file"
  "$ds4" --inspect -m "$model" 2>&1 | tail -5; echo "ds4 --inspect rc ${PIPESTATUS[0]}"
  echo "== ds4-gguf check on the same file"
  build-dev/bin/ds4-gguf check "$model" | grep -v "^note: ignored optional tensor" | tail -3
  build-dev/bin/ds4-gguf check "$model" | grep -c "^note: ignored optional tensor"
fi
if has hf; then
  hf=/dev/shm/hf-saved
  rm -rf "$hf" && mkdir -p "$hf"
  PYTHONUNBUFFERED=1 python3 tools/reference/saved_checkpoint.py "$hf" || exit 1
  build-dev/bin/ds4-gguf convert "$hf/ckpt" --quant f32 --vocab .devdeps/ds4-vocab.gguf \
    -o "$hf/saved-f32.gguf" || exit 1
  build-dev/bin/ds4-gguf check "$hf/saved-f32.gguf" | tail -2
  for b in cpu cuda; do echo "== ds4-ref-check $b"; build-dev/bin/ds4-ref-check "$hf/saved-f32.gguf" "$hf/saved" $b; done
  cp "$hf/ckpt/config.json" "$work/hf-saved-config.json"
  python3 -c "import json,sys; from safetensors import safe_open; f=safe_open(sys.argv[1],'pt'); [print(k, list(f.get_slice(k).get_shape()), f.get_slice(k).get_dtype()) for k in sorted(f.keys())]" \
    "$hf/ckpt/model.safetensors" > "$work/hf-saved-tensors.txt"
  wc -l "$work/hf-saved-tensors.txt"
fi

# The prompts: P1 a short chat turn, P2 the first 11,000 characters of promessi_sposi.txt (the
# 3k-token prompt), P3 the same text with its one non-ASCII punctuation mark (») written as an
# ASCII quote, which both engines tokenize alike (bench/compat.md, "Rendering and tokenization":
# ds4's pre-tokenizer reads non-ASCII punctuation as letters), R* the rendering variants (system
# prompt, thinking on and off).
prompt_args() {
  case $1 in
    p1) echo "-p|Explain what a hash table is, in two sentences.|--nothink" ;;
    p2) echo "--prompt-file|$work/p2.txt|--nothink" ;;
    p3) echo "--prompt-file|$work/p3.txt|--nothink" ;;
    r-think) echo "-p|Explain what a hash table is, in two sentences.|--think" ;;
    r-system) echo "-sys|You are a terse assistant.|-p|List three prime numbers.|--nothink" ;;
  esac
}
export -f prompt_args
python3 - "$work/p2.txt" "$work/p3.txt" <<'PY'
import sys, unicodedata
t = open(".devdeps/promessi_sposi.txt", encoding="utf-8").read()[:11000]
open(sys.argv[1], "w", encoding="utf-8").write(t)
t3 = t.replace("\u00bb", '"').replace("\u00ab", '"')
assert all(ord(c) < 128 or unicodedata.category(c).startswith("L") for c in t3)
open(sys.argv[2], "w", encoding="utf-8").write(t3)
PY
# run ENGINE BACKEND PROMPT [DUMPS]: the dumps for one prompt (ENGINE ds4 or ours; DUMPS l, p or
# lp, the default). ds4 refuses to start while another ds4 process runs: its runs go one by one.
run_one() {
  local engine=$1 backend=$2 p=$3 dumps=${4:-lp} t0=$SECONDS args
  IFS='|' read -r -a args <<< "$(prompt_args "$p")"
  local tag="$engine-$backend-$p"
  if [[ $engine == ds4 ]]; then
    local flag=--cuda; [[ $backend == cpu ]] && flag=--cpu
    [[ $dumps == *l* ]] && "$ds4" -m "$model" $flag "${args[@]}" -c 8192 --dump-logits "$work/$tag.logits.json" > "$work/$tag.l.log" 2>&1
    [[ $dumps == *p* ]] && "$ds4" -m "$model" $flag "${args[@]}" -c 8192 -n 16 --dump-logprobs "$work/$tag.logprobs.json" --logprobs-top-k 128 > "$work/$tag.p.log" 2>&1
  else  # both dumps from one run: the prompt is evaluated once (logits first, then the continuation)
    local dump=()
    [[ $dumps == *l* ]] && dump+=(--dump-logits "$work/$tag.logits.json")
    [[ $dumps == *p* ]] && dump+=(-n 16 --dump-logprobs "$work/$tag.logprobs.json" --logprobs-top-k 128)
    # CPU_SET (taskset's list) and CPU_THREADS keep a CPU run off the cores a GPU run uses.
    local cmd=("$ours")
    [[ $backend == cpu && -n $CPU_SET ]] && cmd=(taskset -c "$CPU_SET" "$ours" -t "$CPU_THREADS")
    "${cmd[@]}" -m "$model" --backend "$backend" "${args[@]}" -c 8192 "${dump[@]}" > "$work/$tag.lp.log" 2>&1
  fi
  echo "$tag rc $? $((SECONDS - t0)) s" >> "$work/times.txt"
}
export -f run_one
ENGINES=${ENGINES:-ds4 ours}  # which engines the cpu and gpu chains run
CPU_SET=${CPU_SET:-} CPU_THREADS=${CPU_THREADS:-0}
export work model ds4 ours ENGINES BG_RUNS CPU_SET CPU_THREADS
if has cpu; then
  rm -f "$work/cpu.done"
  setsid bash -c 'for p in p1 r-think r-system p3 p2; do for e in $ENGINES; do run_one $e cpu $p; done; done; touch $work/cpu.done' \
    > "$work/cpu-chain.log" 2>&1 < /dev/null &
  echo "CPU chain started"
fi
# list: the runs of RUNS ("ENGINE:BACKEND:PROMPT:DUMPS ..."), one by one; BG_RUNS the same in a
# background session (for runs of our engine, which may overlap ds4's).
if has list; then
  if [[ -n ${BG_RUNS:-} ]]; then
    setsid bash -c 'for r in $BG_RUNS; do run_one ${r//:/ }; done' > "$work/bg.log" 2>&1 < /dev/null &
  fi
  for r in ${RUNS:-}; do run_one ${r//:/ }; done
  cat "$work/times.txt"
fi
if has gpu; then
  for p in ${GPU_PROMPTS:-p1 p2 r-think r-system}; do for e in $ENGINES; do run_one $e cuda $p; done; done
  cat "$work/times.txt"
fi
if has collect; then
  # Waits for the CPU chain until DEADLINE seconds since this script started.
  while ((SECONDS < ${DEADLINE:-0})) && [[ ! -e $work/cpu.done ]]; do sleep 5; done
  cat "$work/times.txt"
  python3 tools/compat/compare.py "$work" | tee "$work/compare.md"
  tar -C "$work" -czf "$OUT/compat.tgz" --exclude='*.gguf' .
fi
