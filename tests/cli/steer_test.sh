#!/usr/bin/env bash
# tests/cli/steer_test.sh DS4_STEER DS4 MODEL: ds4-steer as a user runs it on the tiny model (issue
# 54): build writes the direction file (n_layer x n_embd float32) and its metadata; sweep answers
# at each scale, scale 0 as ds4 answers without steering; ds4 takes the file; usage errors exit 2
# with one line.
set -uo pipefail
steer=$1 ds4=$2 model=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }

printf 'Answer in one word.\nBe brief.\n' > "$work/good.txt"
printf 'Explain at great length.\nWrite a long essay about it.\n' > "$work/bad.txt"
"$steer" build -m "$model" --good "$work/good.txt" --bad "$work/bad.txt" -o "$work/brief.f32" \
  --ctx 128 -t 2 > "$work/build.out" 2>&1
check "build exits 0" "[[ \$? == 0 ]] || ! cat '$work/build.out'"
check "build says what it wrote" "grep -q 'wrote $work/brief.f32 (6 layers x 256, 2 prompt pairs)' '$work/build.out'"
check "direction file is 6 x 256 float32" "[[ \$(stat -c %s '$work/brief.f32') == 6144 ]]"
check "metadata beside it" "grep -q '\"format\": \"ds4-directional-steering-v1\"' '$work/brief.json'"

"$steer" sweep -m "$model" --dir-steering-file "$work/brief.f32" -p 'Tell me a story' \
  --scales 0,2 -n 12 -t 2 > "$work/sweep.out" 2> "$work/sweep.err"
check "sweep exits 0" "[[ \$? == 0 ]] || ! cat '$work/sweep.err'"
check "sweep answers at each scale" "grep -qx '== ffn 0' '$work/sweep.out' && grep -qx '== ffn 2' '$work/sweep.out'"
plain=$("$ds4" -m "$model" -p 'Tell me a story' --temp 0 --nothink -n 12 -t 2 2>/dev/null)
at0=$(sed -n '/^== ffn 0$/,/^== ffn 2$/p' "$work/sweep.out" | sed '1d;$d')
check "scale 0 answers as ds4 without steering" "[[ \"\$at0\" == \"\$plain\" ]]"
"$ds4" -m "$model" -p 'Tell me a story' --temp 0 --nothink -n 4 -t 2 \
  --dir-steering-file "$work/brief.f32" --dir-steering-ffn -1.5 > /dev/null 2> "$work/ds4.err"
check "ds4 runs with the built file" "[[ \$? == 0 ]] && grep -q 'directional steering enabled: .* attn=0 ffn=-1.5' '$work/ds4.err'"

usage() {  # usage NAME ARGS...: exit status 2 and one line on stderr
  local name=$1 out code
  shift
  out=$("$steer" "$@" 2>&1 >/dev/null)
  code=$?
  check "usage error: $name" "[[ $code == 2 && \$(wc -l <<<\"\$out\") == 1 ]] || ! echo \"$code: \$out\""
}
usage "no subcommand"
usage "sweep without a file" sweep -m "$model" -p hi
usage "sweep scale out of range" sweep -m "$model" -p hi --dir-steering-file "$work/brief.f32" --scales 0,200
usage "build without prompts" build -m "$model" -o "$work/x.f32"
usage "build with an empty prompt file" build -m "$model" --good /dev/null --bad "$work/bad.txt" -o "$work/x.f32"
check "nothing written by the refused build" "[[ ! -e '$work/x.f32' ]]"
exit $fail
