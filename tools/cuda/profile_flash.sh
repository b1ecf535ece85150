#!/usr/bin/env bash
# tools/cuda/profile_flash.sh [decode]: per-kernel GPU times of one Flash q2 run with the CUDA
# backend (GPU machine, repository root, after verify_all.sh built build-dev and synthesized the
# file): ncu times every kernel launch (gpu__time_duration, clocks left alone) of `ds4`.
#   (no argument) prefilling a ~500-token prompt and decoding 4 tokens;
#   decode        only 2 decoded tokens (eager, DS4_CUDA_PROFILE_STEPS=2) after a prompt of
#                 PROMPT_BYTES (default 7000) bytes of the fixture text (~2k tokens).
#   verify        one speculative verification of 3 rows (ds4 --mtp, 2 drafts, margin 0; eager,
#                 DS4_CUDA_PROFILE_ROWS=3 DS4_CUDA_PROFILE_STEPS=1) after decode's prompt:
#                 $OUT/ncu-verify.csv, to set beside decode's per-step times (bench/mtp.md).
#   chunk         one CHUNK-row (default 2048) prefill chunk deep in a prompt: the chunk from
#                 position AT (default 6144, the last before 8k) of a PROMPT_BYTES (default 31000,
#                 ~9.6k tokens) prompt of the fixture text (DS4_CUDA_PROFILE_AT opens the range):
#                 $OUT/ncu-chunk.csv.
#   deep          the decode run with a few more counters (DRAM bytes, instructions, shared-memory
#                 wavefronts) for its first KERNELS launches (default 100, a few layers):
#                 $OUT/ncu-deep.csv. Counters that need several replay passes are costly here:
#                 each pass saves and restores device memory (ncu's full sections, ~38 passes,
#                 took 280 s for 16 launches on the H200).
#   fill          the prefill run with ncu's SpeedOfLight, WarpStateStats and Occupancy sections
#                 for the first KERNELS (default 8) launches of the heavy prefill kernels
#                 (tensor-core and float products, HC pre-step, attention): $OUT/ncu-fill.csv.
#                 24 launches did not finish in 226 s on the H200 (each section replays a
#                 launch several times, saving and restoring the memory it may write).
#                 KREGEX replaces the kernel-name pattern; LSKIP skips that many matching
#                 launches first.
#   fillchunk     fill's sections in the chunk run (the chunk at AT): $OUT/ncu-fillchunk.csv.
#   filldec       fill's sections in the decode run, for the decode kernels that bound latency
#                 (HC pre-step, attention, routing, IQ2_XXS rows; KREGEX, KERNELS default 10):
#                 $OUT/ncu-filldec.csv.
#   fillmulti     fill's sections in multi's step for the kernels that bound a batched step (the
#                 routed-expert rows, the dense Q8_0 tensor-core products; KREGEX, KERNELS
#                 default 8): $OUT/ncu-fillmulti.csv.
#   multi         one decode step of SESSIONS (default 16) sessions batched together, each at
#                 2,048 tokens of its own slice of the fixture text (ds4-bench --sessions):
#                 $OUT/ncu-multi.csv.
# The raw CSV goes to $OUT/ncu-prefill.csv or $OUT/ncu-decode.csv (launch order kept, so the
# prefill batch and each decoded token can be told apart: each starts with the embedding kernel).
set -euo pipefail
out=${OUT:-/tmp}
source tools/cuda/common.sh
model=$DS4_FLASH
range=() extra=()
mode=${1:-prefill}
metrics=(--metrics gpu__time_duration.sum --csv --page raw --log-file "$out/ncu-$mode.csv")
if [[ $mode == deep ]]; then
  metrics[1]=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__inst_executed.sum
  metrics[1]+=,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,lts__t_bytes.sum
  metrics+=(--launch-count "${KERNELS:-100}")
elif [[ $mode == fill || $mode == fillchunk || $mode == filldec || $mode == fillmulti ]]; then
  kregex='imma_kernel|matmul_float|hc_pre|attention_s|indexer_scores' kernels=8
  [[ $mode == filldec ]] && kregex='hc_pre|attention_s|route_kernel|FmtIq2Xxs' kernels=10
  [[ $mode == fillmulti ]] && kregex='planar_rows_kernel|q8_mma_kernel' kernels=8
  metrics=(--section SpeedOfLight --section WarpStateStats --section Occupancy
    --kernel-name-base demangled --kernel-name "regex:${KREGEX:-$kregex}"
    --launch-skip "${LSKIP:-0}" --launch-count "${KERNELS:-$kernels}" --csv --page raw
    --log-file "$out/ncu-$mode.csv")
fi
if [[ $mode == chunk || $mode == fillchunk ]]; then
  head -c "${PROMPT_BYTES:-31000}" .devdeps/promessi_sposi.txt > /tmp/prompt.txt
  export DS4_CUDA_PROFILE_AT=${AT:-6144}
  range=(--profile-from-start off)
  n=1
elif [[ $mode == verify ]]; then
  head -c "${PROMPT_BYTES:-7000}" .devdeps/promessi_sposi.txt > /tmp/prompt.txt
  export DS4_CUDA_GRAPHS=0 DS4_CUDA_PROFILE_STEPS=1 DS4_CUDA_PROFILE_ROWS=3
  range=(--profile-from-start off)
  extra=(--mtp "$DS4_FLASH_MTP" --mtp-draft 2 --mtp-margin 0)
  n=3
elif [[ $mode == decode || $mode == deep || $mode == filldec ]]; then
  head -c "${PROMPT_BYTES:-7000}" .devdeps/promessi_sposi.txt > /tmp/prompt.txt
  export DS4_CUDA_GRAPHS=0 DS4_CUDA_PROFILE_STEPS=2
  range=(--profile-from-start off)
  n=3
else
  head -c 2000 docs/engine.md > /tmp/prompt.txt
  n=4
fi
ncu --version | tail -1
if [[ $mode == multi || $mode == fillmulti ]]; then
  DS4_CUDA_PROFILE_STEPS=1 ncu --profile-from-start off --clock-control none --cache-control none \
    "${metrics[@]}" build-dev/bin/ds4-bench -m "$model" --backend cuda \
    --prompt-file .devdeps/promessi_sposi.txt --sessions "${SESSIONS:-16}" --ctx-start 2048 -n 2 \
    > "$out/profile_out.txt" 2> "$out/profile_err.txt" || { tail "$out/profile_err.txt"; exit 1; }
  tail -2 "$out/profile_err.txt"
  wc -l "$out/ncu-$mode.csv"
  exit 0
fi
ncu "${range[@]}" --clock-control none --cache-control none "${metrics[@]}" \
  build-dev/bin/ds4 -m "$model" --backend cuda --prompt-file /tmp/prompt.txt -n "$n" --nothink --temp 0 --ctx "${CTX:-16384}" --prefill-chunk "${CHUNK:-2048}" "${extra[@]}" \
  > "$out/profile_out.txt" 2> "$out/profile_err.txt" || { tail "$out/profile_err.txt"; exit 1; }
tail -2 "$out/profile_err.txt"
wc -l "$out"/ncu-"$mode".*
