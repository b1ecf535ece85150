#!/usr/bin/env bash
# tools/cuda/mtp_same.sh [N]: issue 51's greedy identity on the Flash q2 file (GPU machine,
# repository root, .devdeps carried): ds4 --backend cuda answers a ~2k-token prompt greedily with N
# (default 64) tokens, once plainly and once with --mtp (the synthesized Flash MTP file, 2 drafts,
# --mtp-margin 0 so every step drafts), and the two outputs must be byte-identical. Output under $OUT.
set -euo pipefail
out=${OUT:-/tmp}
gen=${1:-64}
source tools/cuda/common.sh
ds4_build ds4-gguf ds4 > "$out/mtp_same_build.log" 2>&1 || { tail -30 "$out/mtp_same_build.log"; exit 1; }
ds4_flash_model | tail -1
ds4_flash_mtp | tail -1
cat docs/engine.md docs/cli.md docs/gguf.md docs/quant.md | head -c 9000 > /tmp/prompt.txt
run() {
  build-dev/bin/ds4 -m "$DS4_FLASH" --backend cuda --prompt-file /tmp/prompt.txt -n "$gen" --nothink \
    --temp 0 --ctx 4096 --prefill-chunk 2048 "$@"
}
run > "$out/mtp_plain.txt" 2> "$out/mtp_plain_err.txt"
DS4_CUDA_GRAPH_STATS=1 run --mtp "$DS4_FLASH_MTP" --mtp-draft 2 --mtp-margin 0 > "$out/mtp_with.txt" 2> "$out/mtp_with_err.txt"
tail -n 4 "$out/mtp_plain_err.txt" "$out/mtp_with_err.txt"
if cmp -s "$out/mtp_plain.txt" "$out/mtp_with.txt"; then
  echo "mtp greedy identity: $(wc -c < "$out/mtp_plain.txt") bytes identical"
else
  echo "mtp greedy identity: outputs differ"; diff <(od -c "$out/mtp_plain.txt") <(od -c "$out/mtp_with.txt") | head -20
  exit 1
fi
