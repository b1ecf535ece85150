#!/usr/bin/env bash
# tests/cli/model_tools_test.sh DS4_GGUF MODELS_DIR: issue 53's model tools run as a user runs them,
# on the generated tiny files. `quality --record` writes tiny-f32's own greedy continuations of two
# prompts (with their top-20 logprobs); scored against them tiny-f32 itself has KL 0 and top-1 100%
# (teacher forcing gives the recorded logits back exactly), and its q2 file (`quantize`) a positive
# KL; both runs say the file is synthetic; the CSV has a row per case and the total. `quantize` then
# `split` + `splice` give the q2 file back byte for byte. `imatrix` stops at --max-chunks and
# resumes; its matrix feeds `quantize --imatrix`; `--merge` adds matrices. The official vectors
# (../shared/fixtures/official-vectors) are scored when present. Usage errors exit 2 with one line.
set -euo pipefail
gguf=$1 models=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }

mkdir -p "$work/prompts"
echo "Name the capital of Italy in one word." > "$work/prompts/capital.txt"
printf 'def add(a, b):\n    return' > "$work/prompts/code.txt"
cat > "$work/cases.vec" <<'VEC'
# two prompts, no steps yet: --record fills them
case capital 4096 0 prompts/capital.txt
end
case code 4096 0 prompts/code.txt
end
VEC
"$gguf" quality "$models/tiny-f32.gguf" --vectors "$work/cases.vec" --record "$work/own.vec" \
  --steps 6 --top 20 -t 2 > "$work/record.out"
check "--record writes both cases, 6 steps of 20 alternatives each" \
  "[[ \$(grep -c '^case ' '$work/own.vec') == 2 && \$(grep -c '^step ' '$work/own.vec') == 12 &&
     \$(grep -c '^top ' '$work/own.vec') == 240 ]]"

"$gguf" quality "$models/tiny-f32.gguf" --vectors "$work/own.vec" --csv "$work/f32.csv" -t 2 \
  > "$work/f32.out"
check "the recording model: KL exactly 0 and top-1 on every step" \
  "awk -F, 'NR > 1 { if (\$6 != 0 || \$7 != 0 || \$5 != \$2) bad = 1; n++ } END { exit bad || n != 3 }' '$work/f32.csv'"
check "a synthetic file is named as such" "grep -q 'synthetic (random) weights' '$work/f32.out'"

"$gguf" quantize "$models/tiny-f32.gguf" --quant q2 -t 2 -o "$work/q2.gguf" > /dev/null
"$gguf" quality "$work/q2.gguf" --vectors "$work/own.vec" --csv "$work/q2.csv" -t 2 > "$work/q2.out"
check "its q2 file drifts: positive KL" \
  "awk -F, '\$1 == \"all\" { exit !(\$6 > 0) }' '$work/q2.csv'"

"$gguf" split "$work/q2.gguf" --layers 0:3 -o "$work/front.gguf" > /dev/null
"$gguf" split "$work/q2.gguf" --layers 4:output -o "$work/back.gguf" > /dev/null
"$gguf" splice "$work/back.gguf" "$work/front.gguf" -o "$work/whole.gguf" > /dev/null
check "split + splice give the quantized file back byte for byte" \
  "cmp -s '$work/whole.gguf' '$work/q2.gguf'"

cat "$work/prompts/capital.txt" "$work/prompts/code.txt" "$0" > "$work/corpus.txt"
"$gguf" imatrix "$models/tiny-f32.gguf" --text "$work/corpus.txt" --chunk 64 --max-chunks 2 \
  -o "$work/tiny.imatrix" -t 2 > "$work/imx1.out"
"$gguf" imatrix "$models/tiny-f32.gguf" --text "$work/corpus.txt" --chunk 64 \
  -o "$work/tiny.imatrix" -t 2 > "$work/imx2.out"
check "imatrix stops at --max-chunks and the next run resumes there" \
  "grep -q '2 of [0-9]* chunks (0 resumed)' '$work/imx1.out' && grep -q '(2 resumed)' '$work/imx2.out'"
"$gguf" quantize "$models/tiny-f32.gguf" --imatrix "$work/tiny.imatrix" -t 2 -o "$work/q2i.gguf" \
  > /dev/null
"$gguf" imatrix --merge "$work/tiny.imatrix" "$work/tiny.imatrix" -o "$work/twice.imatrix" \
  > "$work/merge.out"
check "quantize --imatrix writes a valid file; --merge adds matrices" \
  "'$gguf' check '$work/q2i.gguf' | grep -q '^ok' && grep -q '2 importance matrices merged' '$work/merge.out'"

official=$(cd "$(dirname "$0")/../../.." && pwd)/shared/fixtures/official-vectors
if [[ -f $official/official.vec ]]; then
  "$gguf" quality "$models/tiny-q2.gguf" --vectors "$official/official.vec" -t 2 > "$work/off.out"
  check "the official vectors score (5 cases and the total)" \
    "[[ \$(grep -cE '^(short|long)_' '$work/off.out') == 5 ]] && grep -q '^all ' '$work/off.out'"
else
  echo "skip: ../shared/fixtures/official-vectors not present"
fi

usage_error() {  # NAME PATTERN ARGS...
  local name=$1 pattern=$2 rc=0
  shift 2
  "$gguf" "$@" > /dev/null 2> "$work/err" || rc=$?
  check "usage error: $name" \
    "(( rc == 2 )) && [[ \$(wc -l < '$work/err') == 1 ]] && grep -q -- '$pattern' '$work/err'"
}
usage_error "quantize of quantized experts" "already quantized" \
  quantize "$models/tiny-q2.gguf" -o "$work/x.gguf"
usage_error "quantize --q4-last with q4" "--q4-last goes with" \
  quantize "$models/tiny-f32.gguf" --quant q4 --q4-last 1 -o "$work/x.gguf"
usage_error "splice of one file" "two input files" splice "$work/q2.gguf" -o "$work/x.gguf"
usage_error "splice short of layers" "no input holds" \
  splice "$work/front.gguf" "$work/front.gguf" -o "$work/x.gguf"
printf 'case a 10 1 p.txt\nstep 0 zz 1\n' > "$work/bad.vec"
rc=0
"$gguf" quality "$models/tiny-q2.gguf" --vectors "$work/bad.vec" > /dev/null 2> "$work/err" || rc=$?
check "a damaged vector file: its line named" \
  "(( rc != 0 )) && grep -q 'vectors line 2: SELECTED_HEX' '$work/err'"
usage_error "imatrix without input" "no calibration input" \
  imatrix "$models/tiny-f32.gguf" -o "$work/none.imatrix"
usage_error "imatrix --merge of one file" "two importance matrices" \
  imatrix --merge "$work/tiny.imatrix" -o "$work/none.imatrix"
check "no partial files left" "! ls '$work' | grep -qE '\\.(partial|splice)\$'"
exit $fail
