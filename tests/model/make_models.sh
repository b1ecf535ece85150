#!/usr/bin/env bash
# tests/model/make_models.sh DS4_GGUF OUT_DIR VOCAB [SET]: the model files the tests load.
#   model (default)  the `model` tests' files: f32 files of the reference shapes written directly
#                    and through the Hugging Face export + converter path, the tiny shape in the
#                    quantized recipes, the decisive small q2 file and the tiny MTP file
#   cuda             the `cuda` tests' files (model_cuda_test): the f32 reference shapes, the
#                    quantized recipes of tiny and small q2, each also with --decisive-routing
#                    (file name ending in d: tiny-q2d), and decisive f32 files quantized by
#                    `ds4-gguf quantize` (small-quantized-q2d: q2; tiny-quantized-mixd: q2 with the
#                    last layer at q4). Made only where a GPU is present: without one those tests
#                    skip before they read a file.
# A file is rebuilt only when missing or older than the ds4-gguf binary, so repeated test runs
# reuse them. The sets share files and may run at once (ctest -j): one run at a time holds the
# folder's lock.
# Disk: each converted file is made (checkpoint + output, then the checkpoint is removed) before
# the direct file of its shape, so the peak is two copies of a shape, not three (small f32 is
# 2.9 GB a copy).
set -euo pipefail
gguf=$1 out=$2 vocab=$3 set=${4:-model}
mkdir -p "$out"
exec 9> "$out/.lock"
flock 9

fresh() { [[ -s $1 && $1 -nt $gguf ]]; }

direct() {  # shape recipe (a recipe ending in d: that recipe with --decisive-routing)
  local f=$out/$1-$2.gguf recipe=$2 extra=()
  [[ $recipe == *d ]] && recipe=${recipe%d} extra=(--decisive-routing)
  fresh "$f" || "$gguf" synth --shape "$1" --quant "$recipe" --seed 1 --vocab "$vocab" \
    "${extra[@]}" -o "$f" >/dev/null
}

converted() {  # shape: HF checkpoint of the same weights, converted back to f32
  local f=$out/$1-f32-converted.gguf hf=$out/$1-hf
  if ! fresh "$f"; then
    rm -rf "$hf"
    "$gguf" synth --shape "$1" --quant f32 --seed 1 --vocab "$vocab" --hf-dir "$hf" >/dev/null
    "$gguf" convert "$hf" --quant f32 --vocab "$vocab" -o "$f" >/dev/null
    rm -rf "$hf"
  fi
}

quantized() {  # shape name quantize-flags...: the shape's decisive f32 file through quantize
  local f=$out/$1-quantized-$2.gguf shape=$1
  shift 2
  direct "$shape" f32d
  fresh "$f" || "$gguf" quantize "$out/$shape-f32d.gguf" -o "$f" "$@" >/dev/null
}

case $set in
  model)
    converted tiny
    for recipe in f32 q8 q2 q4; do direct tiny $recipe; done
    converted small
    direct small f32
    # The decisive law (docs/synth.md) on the small shape, for model_decisive_test.
    fresh "$out/small-q2-decisive.gguf" || "$gguf" synth --shape small --quant q2 --seed 1 \
      --decisive --vocab "$vocab" -o "$out/small-q2-decisive.gguf" >/dev/null
    direct tiny f32 && "$gguf" synth --shape tiny --quant q2 --seed 1 --vocab "$vocab" --mtp \
      -o "$out/tiny-mtp.gguf" >/dev/null
    fresh "$out/small-mtp.gguf" || "$gguf" synth --shape small --quant q2 --seed 1 \
      --vocab "$vocab" --mtp -o "$out/small-mtp.gguf" >/dev/null
    ;;
  cuda)
    if ! nvidia-smi -L > /dev/null 2>&1 && [[ ! -e /dev/nvidia0 ]]; then
      echo "no GPU here: the cuda tests skip, their model files are not made"
      exit 0
    fi
    for recipe in f32 q8 q2 q4 q8d q2d q4d; do direct tiny $recipe; done
    for recipe in f32 q2 q2d; do direct small $recipe; done
    quantized small q2d --quant q2
    quantized tiny mixd --quant q2 --q4-last 1
    fresh "$out/tiny-mtp.gguf" || "$gguf" synth --shape tiny --quant q2 --seed 1 --vocab "$vocab" \
      --mtp -o "$out/tiny-mtp.gguf" >/dev/null
    ;;
  *)
    echo "unknown set '$set' (model or cuda)" >&2
    exit 2
    ;;
esac
