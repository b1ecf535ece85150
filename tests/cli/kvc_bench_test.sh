#!/usr/bin/env bash
# tests/cli/kvc_bench_test.sh DS4_KVC_BENCH MODEL: ds4-kvc-bench on the tiny model. The session
# mode at 300 tokens prints its five steps with times and a payload of the size 300 tokens give
# the tiny shape (its session survives import, export, write, read and restart: any failing step
# is status 1); the file mode prints both loads; a bad flag is an error.
set -euo pipefail
bench=$1 model=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir "$tmp/kv"
"$bench" --model "$model" --tokens 300 --reps 2 -t 2 --dir "$tmp/kv" >"$tmp/session.out" ||
  fail "session mode: status $? $(cat "$tmp/session.out")"
python3 - "$tmp/session.out" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"300 tokens, payload ([0-9.]+) MB", text)
assert m, text
# Tiny: 6 layers of window 16 (two sliding, two ratio-4, two ratio-128), 129,280 logits.
floats = 300 + 129280 + 12 + 6 * 16 * 512 + 2 * (75 * 512 + 2 * 8 * 1024 + 75 * 128 + 2 * 8 * 256) \
    + 2 * (2 * 512 + 2 * 128 * 512)
assert abs(float(m.group(1)) - (52 + 4 * floats) / 1e6) < 0.05, (m.group(1), (52 + 4 * floats) / 1e6)
rows = re.findall(r"^\| (import|export|write|read|restart)[^|]*\| ([0-9.]+) \| ([0-9.]+) \|", text, re.M)
assert [r[0] for r in rows] == ["import", "export", "write", "read", "restart"], text
for name, med, low in rows:
    assert float(med) >= float(low) > 0, (name, med, low)
print("session mode: five steps timed, payload", m.group(1), "MB")
PY
ls -A "$tmp/kv" | grep -q . && fail "the session mode left files: $(ls -A "$tmp/kv")"

"$bench" --mb 1 --tokens 300 --reps 1 --dir "$tmp/kv" >"$tmp/file.out" || fail "file mode: status $?"
grep -q "| framing only |" "$tmp/file.out" && grep -q "| verified" "$tmp/file.out" ||
  fail "file mode: $(cat "$tmp/file.out")"
status=0
"$bench" --model "$model" --backend nope >/dev/null 2>"$tmp/bad" || status=$?
[[ $status != 0 ]] || fail "a bad --backend was accepted"
status=0
"$bench" --model "$tmp/missing.gguf" --dir "$tmp" >/dev/null 2>"$tmp/bad" || status=$?
[[ $status == 1 ]] && grep -q "missing.gguf\|open" "$tmp/bad" || fail "a missing model: status $status $(cat "$tmp/bad")"
echo ok
