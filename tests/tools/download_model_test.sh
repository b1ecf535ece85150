#!/usr/bin/env bash
# End-to-end checks of scripts/download_model.sh against http_range_server.py on 127.0.0.1: full
# download and ds4flash.gguf link, resume after an interrupted transfer, no re-download of a complete
# file, targets that leave the link alone, usage errors, bearer tokens, 404 and size mismatches.
# Usage: download_model_test.sh DOWNLOAD_MODEL_SH HTTP_RANGE_SERVER_PY
set -uo pipefail
script=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")  # absolute: runs happen in other directories
server=$2
tmp=$(mktemp -d)
server_pid=""
stop_server() {
  if [[ -n $server_pid ]]; then
    kill "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
    server_pid=""
  fi
}
trap 'stop_server; rm -rf "$tmp"' EXIT
passed=0
failed=0
check() {  # check NAME CONDITION...
  local name=$1
  shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $name"; fi
}

# Keep the user's environment out: no real token, curlrc or proxy.
export HOME="$tmp/home" HF_HOME="$tmp/hf" no_proxy='*' NO_PROXY='*'
unset HF_TOKEN CURL_HOME http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY
mkdir -p "$HOME" "$HF_HOME" "$tmp/srv"

q2=DeepSeek-V4-Flash-IQ2XXS-w2Q2K-AProjQ8-SExpQ8-OutQ8-chat-v2-imatrix.gguf
mtp=DeepSeek-V4-Flash-MTP-Q4K-Q8_0-F32.gguf
pro_a=DeepSeek-V4-Pro-Q4K-Layers00-30.gguf
pro_b=DeepSeek-V4-Pro-Q4K-Layers-31-output.gguf
head -c 3000000 /dev/urandom >"$tmp/srv/$q2"
head -c 500000 /dev/urandom >"$tmp/srv/$mtp"
head -c 200000 /dev/urandom >"$tmp/srv/$pro_a"
head -c 300000 /dev/urandom >"$tmp/srv/$pro_b"
log=$tmp/requests.log

start_server() {  # start_server [SERVER OPTIONS...]: sets base to its /resolve/main URL
  stop_server
  rm -f "$tmp/port"
  : >"$log"
  python3 "$server" --dir "$tmp/srv" --log "$log" --port-file "$tmp/port" "$@" \
    >/dev/null 2>>"$tmp/server.err" &
  server_pid=$!
  local i
  for ((i = 0; i < 200; i++)); do
    [[ -s $tmp/port ]] && break
    sleep 0.05
  done
  base="http://127.0.0.1:$(cat "$tmp/port")/resolve/main"
}
rc=0
dl() {  # dl WORKDIR ARGS...: runs the script in WORKDIR; sets rc, output in $tmp/out and $tmp/err
  local wd=$1
  shift
  mkdir -p "$wd"
  (cd "$wd" && DS4_MODEL_BASE_URL=$base bash "$script" "$@") >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
absent() { ! grep -q "$1" "${@:2}"; }  # absent TEXT FILE...
size() { wc -c <"$1" | tr -d ' '; }

start_server
# (1) a main target downloads fully and becomes ./ds4flash.gguf
w1=$tmp/w1
dl "$w1" q2-imatrix
check "q2-imatrix exits 0" test "$rc" -eq 0
check "q2-imatrix file is identical" cmp -s "$tmp/srv/$q2" "$w1/gguf/$q2"
check "no .part left" test ! -e "$w1/gguf/$q2.part"
check "ds4flash.gguf is a symlink" test -L "$w1/ds4flash.gguf"
check "ds4flash.gguf points at the model" test "$(readlink "$w1/ds4flash.gguf")" = "gguf/$q2"
check "ds4flash.gguf resolves to the bytes" cmp -s "$tmp/srv/$q2" "$w1/ds4flash.gguf"

# (3) a complete file is not fetched again
: >"$log"
dl "$w1" q2-imatrix
check "re-run exits 0" test "$rc" -eq 0
check "re-run says already complete" grep -q "already complete" "$tmp/out"
check "re-run makes no GET" test "$(grep -c '^GET ' "$log")" -eq 0
check "re-run checks the size with HEAD" grep -q '^HEAD ' "$log"

# (4) mtp downloads but leaves ds4flash.gguf alone
dl "$w1" mtp
check "mtp exits 0" test "$rc" -eq 0
check "mtp file is identical" cmp -s "$tmp/srv/$mtp" "$w1/gguf/$mtp"
check "mtp leaves ds4flash.gguf" test "$(readlink "$w1/ds4flash.gguf")" = "gguf/$q2"

# pro-q4-split fetches both halves into --dir and creates no link
w3=$tmp/w3
dl "$w3" pro-q4-split --dir models
check "pro-q4-split exits 0" test "$rc" -eq 0
check "pro-q4-split first half" cmp -s "$tmp/srv/$pro_a" "$w3/models/$pro_a"
check "pro-q4-split second half" cmp -s "$tmp/srv/$pro_b" "$w3/models/$pro_b"
check "pro-q4-split makes no link" test ! -e "$w3/ds4flash.gguf" -a ! -L "$w3/ds4flash.gguf"

# 404: a file the server does not have
dl "$tmp/w4" pro-q2-imatrix
check "404 exits 1" test "$rc" -eq 1
check "404 names the URL" grep -q "not found: $base/DeepSeek-V4-Pro-" "$tmp/err"
check "404 makes no link" test ! -L "$tmp/w4/ds4flash.gguf"

# (5) usage errors: exit 2, usage listing the targets on stderr
dl "$tmp/w5" q3-imatrix
check "unknown target exits 2" test "$rc" -eq 2
check "unknown target is named" grep -q "unknown target: q3-imatrix" "$tmp/err"
check "usage lists targets" grep -q "pro-q4-layers31-output" "$tmp/err"
check "usage goes to stderr only" test ! -s "$tmp/out"
dl "$tmp/w5"
check "missing target exits 2" test "$rc" -eq 2
check "missing target shows usage" grep -q "^usage: " "$tmp/err"
dl "$tmp/w5" q2-imatrix --frobnicate
check "unknown option exits 2" test "$rc" -eq 2
dl "$tmp/w5" --help
check "--help exits 0" test "$rc" -eq 0
check "--help prints usage" grep -q "q2-q4-imatrix" "$tmp/out"
mkdir -p "$tmp/nocurl"
(cd "$tmp/w5" && PATH=$tmp/nocurl "$BASH" "$script" q2-imatrix) >"$tmp/out" 2>"$tmp/err"
rc=$?
check "missing curl exits 2" test "$rc" -eq 2
check "missing curl gives a hint" grep -q "curl not found" "$tmp/err"

# (2) an interrupted first GET fails, keeps the .part, and the re-run resumes with a Range request
start_server --cut-after 1000000
w2=$tmp/w2
dl "$w2" q2-imatrix
check "interrupted run fails" test "$rc" -ne 0
check "interrupted run says re-run resumes" grep -q "re-run the same command to resume" "$tmp/err"
check "interrupted run keeps the .part" test -s "$w2/gguf/$q2.part"
check "interrupted run makes no final file" test ! -e "$w2/gguf/$q2"
check "interrupted run makes no link" test ! -L "$w2/ds4flash.gguf"
partial=$(size "$w2/gguf/$q2.part")
check "partial size is the cut point" test "$partial" -eq 1000000
dl "$w2" q2-imatrix
check "resumed run exits 0" test "$rc" -eq 0
check "resumed run sends Range: bytes=N-" grep -q "^GET /files/$q2 bytes=$partial-\$" "$log"
check "resumed file is identical" cmp -s "$tmp/srv/$q2" "$w2/gguf/$q2"
check "resumed run links" test "$(readlink "$w2/ds4flash.gguf")" = "gguf/$q2"

# (6) a server that requires a token
start_server --token s3cr3t-t0ken
dl "$tmp/w6a" q2-imatrix
check "no token fails" test "$rc" -eq 1
check "no token mentions the token" grep -q "token" "$tmp/err"
dl "$tmp/w6b" q2-imatrix --token wrong-t0ken
check "wrong token fails" test "$rc" -eq 1
check "wrong token is not printed" absent wrong-t0ken "$tmp/out" "$tmp/err"
dl "$tmp/w6c" q2-imatrix --token s3cr3t-t0ken
check "--token works" test "$rc" -eq 0
check "--token file is identical" cmp -s "$tmp/srv/$q2" "$tmp/w6c/gguf/$q2"
check "token is never printed" absent s3cr3t "$tmp/out" "$tmp/err"
HF_TOKEN=s3cr3t-t0ken dl "$tmp/w6d" mtp
check "HF_TOKEN works" test "$rc" -eq 0
printf 's3cr3t-t0ken\n' >"$HF_HOME/token"
dl "$tmp/w6e" mtp
check "token cache works" test "$rc" -eq 0
rm -f "$HF_HOME/token"

# (7) HEAD reports a different size than the GET delivers: error, .part kept
start_server --head-size-offset 7
w7=$tmp/w7
dl "$w7" q2-imatrix
check "size mismatch exits 1" test "$rc" -eq 1
check "size mismatch is reported" grep -q "size mismatch" "$tmp/err"
check "size mismatch keeps the .part" test -s "$w7/gguf/$q2.part"
check "size mismatch makes no final file" test ! -e "$w7/gguf/$q2"
check "size mismatch makes no link" test ! -L "$w7/ds4flash.gguf"

# network failure before any transfer: the server is gone
stop_server
dl "$tmp/w8" q2-imatrix
check "unreachable server exits 1" test "$rc" -eq 1
check "unreachable server is reported" grep -q "cannot reach" "$tmp/err"
check "errors are one line" test "$(wc -l <"$tmp/err")" -eq 1

echo "download_model_test: $passed passed, $failed failed"
test "$failed" -eq 0
