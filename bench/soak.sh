#!/usr/bin/env bash
# bench/soak.sh [SECONDS]: the soak of bench/soak.md. Runs tests/server/soak.mjs (64 clients of
# valid, invalid and abandoned requests against ds4-server on the CPU backend with the tiny test
# model) for SECONDS (default 1800) and rewrites bench/soak.md from its figures: the commit, the
# hardware, the command, the driver's tables and verdict. The section "What limits the next step"
# is written by hand: an existing one is kept as it is. The driver's CSV of every sample, its
# console output and the server's stderr go to $OUT (default /tmp/ds4-soak). THREADS (default 2)
# is the server's -t. Exit status: the driver's (0 when every check passed).
#
# Needs build/bin/ds4-server and the tiny model (build/testdata/server/tiny-q2.gguf):
#   cmake --build build --target ds4-server ds4-gguf
#   ctest --test-dir build -R server_model_fixture
set -uo pipefail
cd "$(dirname "$0")/.."
duration=${1:-1800}
out=${OUT:-/tmp/ds4-soak}
threads=${THREADS:-2}
report=bench/soak.md
mkdir -p "$out"
for f in build/bin/ds4-server build/testdata/server/tiny-q2.gguf; do
  [[ -e $f ]] || { echo "soak.sh: $f is missing (see the header of $0)"; exit 2; }
done

commit=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- src apps tests/server bench/soak.sh || commit="$commit + uncommitted changes"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
cores=$(nproc)
mem_gib=$(awk '/MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo)
compiler=$(sed -n 's/^set(CMAKE_CXX_COMPILER_ID "\(.*\)")/\1/p' build/CMakeFiles/*/CMakeCXXCompiler.cmake | head -1)
compiler="$compiler $(sed -n 's/^set(CMAKE_CXX_COMPILER_VERSION "\(.*\)")/\1/p' build/CMakeFiles/*/CMakeCXXCompiler.cmake | head -1)"
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' build/CMakeCache.txt)
started=$(date -u '+%Y-%m-%d %H:%M UTC')

node tests/server/soak.mjs --duration "$duration" --threads "$threads" \
  --markdown "$out/soak-tables.md" --csv "$out/soak.csv" --log "$out/server.log" | tee "$out/soak.out"
status=${PIPESTATUS[0]}
[[ -s $out/soak-tables.md ]] || { echo "soak.sh: the driver wrote no summary (status $status)"; exit "$status"; }

# The hand-written section of the current report, if there is one.
limits=$(awk '/^## What limits the next step/ {on = 1} on' "$report" 2>/dev/null)
if [[ -z $limits ]]; then
  limits=$'## What limits the next step\n\n(To be written from the figures above.)'
fi

{
  cat <<EOF
# Soak: ds4-server under mixed load (CPU backend)

Whether ds4-server stays correct and flat (memory, threads, open descriptors) through $((duration / 60))
minutes of 64 clients sending valid, invalid and abandoned requests (issue 47). Speed is not the
point: the server runs the tiny test model on a shared machine, and its queue is full most of the
time on purpose.

**Measured at \`$commit\`** ($started). Hardware: $cpu, $cores vCPUs, $mem_gib GiB RAM, shared with
other builds. Build: $compiler, $build_type. Node $(node --version).

## Regenerate

\`\`\`sh
cmake --build build --target ds4-server ds4-gguf && ctest --test-dir build -R server_model_fixture
bash bench/soak.sh $duration    # writes this file; samples, console output and server log in \$OUT
\`\`\`

CI runs the same driver for 60 s (\`server_soak_test\`, label \`server\`).

## What it does

\`tests/server/soak.mjs\` starts the server, primes it (each generating endpoint streaming and
not, then eight of the largest prompts at once, so the step buffers reach their size), waits for
it to idle and takes the baseline, then runs 64 clients for the duration, each sending one
request after another (a 0-100 ms pause between) drawn from \`tests/server/soak_cases.mjs\`
(weights: ~60% valid, ~25% invalid, ~15% abandoned; half the clients keep their connection
alive). Valid: chat completions, completions, Messages, Responses (streaming and not, 1-8
tokens; forced tool calls, thinking budgets, stop strings, previous_response_id), count_tokens,
the model list, /health, OPTIONS, and an HTTP/1.0 stream, a chunked body and Expect:
100-continue on raw sockets. Invalid: malformed JSON (truncated, not UTF-8, 5,000 levels deep),
wrong types, out-of-range values, unknown routes and models, prompts over the context, bodies over
\`--max-body\`, garbage request lines, bad Content-Length, truncated bodies, stalled headers.
Abandoned: the client leaves mid-headers, mid-body, 0-300 ms after sending, after 1-4 stream
events, or before reading a non-streaming answer. When the clients stop it waits for the server
to settle, sends one more request per endpoint and stops it with SIGTERM.

Judged (constants and reasons in soak.mjs): no 5xx; every valid request answered 2xx with a
well-formed body (streams end as their protocol's do); every invalid one refused with a 4xx
(broken HTTP: or a close) within 30 s; **memory flat**: RssAnon's largest sample in the last
quarter at most max(32 MiB, 10%) above its largest in the warm-up (the first 20%); **threads and
fds flat**: the same comparison with +32 allowed, and both back to the idle baseline exactly
within 30 s of the clients stopping; /health answering within 10 s throughout; the server still
serving afterwards and exiting 0 on SIGTERM.

## Figures

EOF
  cat "$out/soak-tables.md"
  echo
  echo "$limits"
} > "$report.tmp" && mv "$report.tmp" "$report"
echo "soak.sh: wrote $report (driver status $status)"
exit "$status"
