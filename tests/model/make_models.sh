#!/usr/bin/env bash
# tests/model/make_models.sh DS4_GGUF OUT_DIR VOCAB: the model files the `model` tests load.
# f32 files of the reference shapes written directly and through the Hugging Face export +
# converter path, plus the tiny shape in the quantized recipes. A file is rebuilt only when
# missing or older than the ds4-gguf binary, so repeated test runs reuse them.
# Disk: each converted file is made (checkpoint + output, then the checkpoint is removed) before
# the direct file of its shape, so the peak is two copies of a shape, not three (small f32 is
# 2.9 GB a copy).
set -euo pipefail
gguf=$1 out=$2 vocab=$3
mkdir -p "$out"

fresh() { [[ -s $1 && $1 -nt $gguf ]]; }

direct() {  # shape recipe
  local f=$out/$1-$2.gguf
  fresh "$f" || "$gguf" synth --shape "$1" --quant "$2" --seed 1 --vocab "$vocab" -o "$f" >/dev/null
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

converted tiny
for recipe in f32 q8 q2 q4; do direct tiny $recipe; done
converted small
direct small f32
# The decisive law (docs/synth.md) on the small shape, for model_decisive_test.
fresh "$out/small-q2-decisive.gguf" || "$gguf" synth --shape small --quant q2 --seed 1 --decisive \
  --vocab "$vocab" -o "$out/small-q2-decisive.gguf" >/dev/null
direct tiny f32 && "$gguf" synth --shape tiny --quant q2 --seed 1 --vocab "$vocab" --mtp \
  -o "$out/tiny-mtp.gguf" >/dev/null
