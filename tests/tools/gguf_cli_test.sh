#!/usr/bin/env bash
# End-to-end checks of the ds4-gguf command line: exit codes (0 ok, 1 bad input, 2 usage), one-line
# errors, and the info / tokenize outputs on the real vocabulary GGUF built by the ctest fixture;
# split on a synthesized tiny file.
# Usage: gguf_cli_test.sh DS4_GGUF_BINARY VOCAB_GGUF
set -uo pipefail
bin=$1
vocab=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
check() {  # check NAME CONDITION...
  local name=$1
  shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $name"; fi
}

# info on a valid file
"$bin" info "$vocab" >"$tmp/info.out" 2>"$tmp/info.err"
check "info exits 0" test $? -eq 0
check "info shows version" grep -q "gguf version 3" "$tmp/info.out"
check "info shows token array" grep -q "tokenizer.ggml.tokens .*array<string>\[129280\]" "$tmp/info.out"
check "info abbreviates arrays" grep -q "(129280 total)" "$tmp/info.out"

# info on a corrupt file: exit 1, exactly one line naming the problem
head -c 100 "$vocab" >"$tmp/cut.gguf"
"$bin" info "$tmp/cut.gguf" >"$tmp/cut.out" 2>"$tmp/cut.err"
check "corrupt file exits 1" test $? -eq 1
check "corrupt file gives one line" test "$(wc -l <"$tmp/cut.err")" -eq 1
check "corrupt file names the problem" grep -q "invalid file: .*cut.gguf: .*offset" "$tmp/cut.err"
"$bin" info "$tmp/missing.gguf" 2>"$tmp/missing.err"
check "missing file exits 1" test $? -eq 1
check "missing file says not found" grep -q "not found" "$tmp/missing.err"

# usage errors: exit 2
"$bin" 2>/dev/null
check "no subcommand exits 2" test $? -eq 2
"$bin" info 2>/dev/null
check "missing argument exits 2" test $? -eq 2
"$bin" tokenize "$vocab" --chat sideways </dev/null 2>/dev/null
check "bad --chat exits 2" test $? -eq 2

# tokenize: plain text, pieces, and a rendered chat turn. Expected ids were produced by the npm
# reference tokenizer (tests/oracle/tokenize.mjs): "Hello world" -> 19923 2058, "hi" -> 6366.
printf 'Hello world' | "$bin" tokenize "$vocab" >"$tmp/tok.out" 2>/dev/null
check "tokenize ids" test "$(tr '\n' ' ' <"$tmp/tok.out")" = "19923 2058 "
printf 'Hello world' | "$bin" tokenize "$vocab" --pieces >"$tmp/pieces.out" 2>/dev/null
check "tokenize pieces" grep -q $'^2058\tĠworld$' "$tmp/pieces.out"
printf 'hi' | "$bin" tokenize "$vocab" --chat none >"$tmp/chat.out" 2>/dev/null
check "chat none renders BOS User hi Assistant </think>" \
  test "$(tr '\n' ' ' <"$tmp/chat.out")" = "0 128803 6366 128804 128822 "
printf 'hi' | "$bin" tokenize "$vocab" --chat high >"$tmp/high.out" 2>/dev/null
check "chat high opens <think>" test "$(tail -n 1 "$tmp/high.out")" = "128821"
printf '<｜User｜>' | "$bin" tokenize "$vocab" --text >"$tmp/text.out" 2>/dev/null
check "--text keeps specials as text" test "$(wc -l <"$tmp/text.out")" -gt 1

# traffic: the inventory's bytes per decoded token must equal what bench/active_bytes.sh finds by
# parsing the tensor table of a real synthesized file (two independent derivations).
"$bin" synth --shape tiny --quant q2 --vocab "$vocab" -o "$tmp/tiny-q2.gguf" >/dev/null 2>&1
check "synth tiny q2 exits 0" test $? -eq 0
from_file=$(bash "$(dirname "$0")/../../bench/active_bytes.sh" "$tmp/tiny-q2.gguf" "$bin")
"$bin" traffic --shape tiny --quant q2 --ctx 100,5000 --gbps 10 >"$tmp/traffic.out" 2>&1
check "traffic exits 0" test $? -eq 0
check "traffic per-token weights equal the file's ($from_file)" \
  grep -qx "weights_bytes_per_token $from_file" "$tmp/traffic.out"
check "traffic lists both contexts" test "$(grep -cE '^ +(100|5000) ' "$tmp/traffic.out")" -eq 2
"$bin" traffic --shape huge 2>/dev/null
check "traffic unknown shape exits 2" test $? -eq 2
"$bin" traffic --ctx 0 2>/dev/null
check "traffic bad --ctx exits 2" test $? -eq 2

# synth --n-layer: the shape's first N layers as a test shape that check accepts; usage errors.
"$bin" synth --shape small --quant q2 --seed 1 --n-layer 3 --vocab "$vocab" -o "$tmp/cut.gguf" \
  >/dev/null 2>&1
check "synth --n-layer 3 exits 0" test $? -eq 0
"$bin" check "$tmp/cut.gguf" >"$tmp/cut.check" 2>&1
check "check accepts the cut shape" test $? -eq 0
check "the cut shape is a test shape" grep -q "test shape 'custom'" "$tmp/cut.check"
"$bin" info "$tmp/cut.gguf" >"$tmp/cut.info" 2>&1
check "the cut shape has 3 blocks" grep -qE "block_count +u32 +3$" "$tmp/cut.info"
check "the cut shape is named" grep -q "small-3-layers" "$tmp/cut.info"
"$bin" synth --shape small --n-layer 9 --vocab "$vocab" -o "$tmp/bad.gguf" 2>"$tmp/bad.err"
check "synth --n-layer past the shape exits 2" test $? -eq 2
check "synth --n-layer past the shape names both" grep -q "exceeds the small shape's 8 layers" \
  "$tmp/bad.err"
"$bin" synth --shape small --n-layer 2 --mtp --vocab "$vocab" -o "$tmp/bad.gguf" 2>/dev/null
check "synth --n-layer --mtp exits 2" test $? -eq 2

# split (docs/distributed.md, "Slice files"): two slice files that `check` accepts as slices, and
# the --layers usage errors (features.md §10.2), each exit 2 with one line and no file left.
m="$tmp/tiny-q2.gguf"
"$bin" split --layers 0:2 -o "$tmp/front.gguf" "$m" >"$tmp/split.out" 2>&1
check "split 0:2 exits 0" test $? -eq 0
check "split names the slice" grep -q "layers 0:2" "$tmp/split.out"
"$bin" split --layers 3:output -o "$tmp/back.gguf" "$m" >/dev/null 2>&1
check "split 3:output exits 0" test $? -eq 0
"$bin" check "$tmp/back.gguf" >"$tmp/back.check" 2>&1
check "check accepts a slice file" test $? -eq 0
check "check names the slice" grep -q "slice file: layers 3:output of the model" "$tmp/back.check"
whole_fp=$(grep -o 'model [0-9a-f]*' "$tmp/split.out")
check "slice files record the same model" grep -q "of the $whole_fp" "$tmp/back.check"
for layers in 2 1:2:3 a:1 2:1 0:6 7:output 0:-1 :1 0: 0:outputs; do
  "$bin" split --layers "$layers" -o "$tmp/bad.gguf" "$m" 2>"$tmp/bad.err"
  check "split --layers '$layers' exits 2" test $? -eq 2
  check "split --layers '$layers' gives one line" test "$(wc -l <"$tmp/bad.err")" -eq 1
done
check "split bad --layers names the value" grep -q "'0:outputs'" "$tmp/bad.err"
"$bin" split --layers 0:output -o "$tmp/bad.gguf" "$tmp/front.gguf" 2>"$tmp/bad.err"
check "split past its input slice exits 2" test $? -eq 2
check "split past its input slice names both" grep -q "holding layers 0:2 only: layers 0:output" \
  "$tmp/bad.err"
"$bin" split --layers 0:1 "$m" 2>/dev/null
check "split without -o exits 2" test $? -eq 2
"$bin" split --layers 0:1 -o "$tmp/bad.gguf" "$tmp/missing.gguf" 2>/dev/null
check "split of a missing file exits 1" test $? -eq 1
check "failed splits leave no file" test -z "$(ls "$tmp" | grep -E '^bad\.gguf')"

echo "gguf_cli_test: $passed passed, $failed failed"
test "$failed" -eq 0
