#!/usr/bin/env bash
# Downloads the published DeepSeek V4 GGUF files into ./gguf/ (resumable, size-verified) and points
# ./ds4flash.gguf at the chosen main model. See docs/download.md. Works with bash 3.2 (macOS) and up.
# Exit codes: 0 done, 1 runtime failure (network, HTTP, size), 2 usage error or curl missing.
set -euo pipefail

prog=download_model.sh
base_url=${DS4_MODEL_BASE_URL:-https://huggingface.co/antirez/deepseek-v4-gguf/resolve/main}
base_url=${base_url%/}

# Published file names in antirez/deepseek-v4-gguf.
f_q2=DeepSeek-V4-Flash-IQ2XXS-w2Q2K-AProjQ8-SExpQ8-OutQ8-chat-v2-imatrix.gguf
f_q2q4=DeepSeek-V4-Flash-Layers37-42Q4KExperts-OtherExpertLayersIQ2XXSGateUp-Q2KDown-AProjQ8-SExpQ8-OutQ8-chat-v2-imatrix-fixed.gguf
f_q4=DeepSeek-V4-Flash-Q4KExperts-F16HC-F16Compressor-F16Indexer-Q8Attn-Q8Shared-Q8Out-chat-v2-imatrix.gguf
f_pro_q2=DeepSeek-V4-Pro-IQ2XXS-w2Q2K-AProjQ8-SExpQ8-OutQ8-Instruct-imatrix.gguf
f_pro_q4_a=DeepSeek-V4-Pro-Q4K-Layers00-30.gguf
f_pro_q4_b=DeepSeek-V4-Pro-Q4K-Layers-31-output.gguf
f_mtp=DeepSeek-V4-Flash-MTP-Q4K-Q8_0-F32.gguf

usage() {
  cat <<'EOF'
usage: download_model.sh TARGET [--dir DIR] [--token TOKEN]

Main models (./ds4flash.gguf is linked to the downloaded file):
  q2-imatrix              Flash, imatrix q2 (96/128 GB RAM machines)
  q2-q4-imatrix           Flash, q2 with the last 6 layers at q4 (96/128 GB RAM machines)
  q4-imatrix              Flash, imatrix q4 (>= 256 GB RAM machines)
  pro-q2-imatrix          PRO, imatrix q2 (512 GB RAM machines)
Other files (./ds4flash.gguf is left alone):
  pro-q4-layers00-30      PRO Q4 split, first half (layers 0-30)
  pro-q4-layers31-output  PRO Q4 split, second half (layers 31-output)
  pro-q4-split            both PRO Q4 halves
  mtp                     optional Flash MTP (speculative decoding) file, enable with --mtp

Options:
  --dir DIR      store files in DIR instead of ./gguf
  --token TOKEN  Hugging Face token (default: $HF_TOKEN, then ${HF_HOME:-~/.cache/huggingface}/token)
  -h, --help     show this help
Partial downloads are kept as DIR/FILE.part; run the same command again to resume.
EOF
}
usage_error() { echo "$prog: $*" >&2; usage >&2; exit 2; }
die() { echo "$prog: error: $*" >&2; exit 1; }
info() { echo "$prog: $*"; }

target="" dir=gguf token="" token_set=0
while (($# > 0)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --dir) (($# >= 2)) || usage_error "--dir needs a value"; dir=$2; shift ;;
    --dir=*) dir=${1#--dir=} ;;
    --token) (($# >= 2)) || usage_error "--token needs a value"; token=$2; token_set=1; shift ;;
    --token=*) token=${1#--token=}; token_set=1 ;;
    -*) usage_error "unknown option: $1" ;;
    *) [[ -z $target ]] || usage_error "only one target may be given"; target=$1 ;;
  esac
  shift
done

link=0
case $target in
  q2-imatrix) files=("$f_q2"); link=1 ;;
  q2-q4-imatrix) files=("$f_q2q4"); link=1 ;;
  q4-imatrix) files=("$f_q4"); link=1 ;;
  pro-q2-imatrix) files=("$f_pro_q2"); link=1 ;;
  pro-q4-layers00-30) files=("$f_pro_q4_a") ;;
  pro-q4-layers31-output) files=("$f_pro_q4_b") ;;
  pro-q4-split) files=("$f_pro_q4_a" "$f_pro_q4_b") ;;
  mtp) files=("$f_mtp") ;;
  "") usage_error "missing target" ;;
  *) usage_error "unknown target: $target" ;;
esac
[[ -n $dir ]] || usage_error "--dir must not be empty"

if ! command -v curl >/dev/null 2>&1; then
  echo "$prog: error: curl not found; install it (apt-get install curl, brew install curl)" >&2
  exit 2
fi

# Token: --token, else $HF_TOKEN, else the Hugging Face token cache. It is handed to curl through a
# config on stdin, so it shows up neither in the output nor in the process list.
if ((!token_set)); then
  token=${HF_TOKEN:-}
  token_file="${HF_HOME:-${HOME:-}/.cache/huggingface}/token"
  if [[ -z $token && -r $token_file ]]; then token=$(<"$token_file"); fi
fi
token=${token//[$'\t\r\n ']/}
auth_cfg=""
if [[ -n $token ]]; then
  esc=${token//\\/\\\\}
  auth_cfg="header = \"Authorization: Bearer ${esc//\"/\\\"}\""
fi
if [[ -t 2 ]]; then progress=--progress-bar; else progress=--silent; fi

file_size() { stat -c %s "$1" 2>/dev/null || stat -f %z "$1"; }

curl_reason() {  # curl_reason EXIT_CODE: a few words on a curl failure
  case $1 in
    6) echo "could not resolve the host" ;;
    7) echo "could not connect" ;;
    18) echo "the connection closed early" ;;
    28) echo "timed out" ;;
    52) echo "empty reply from the server" ;;
    56) echo "connection reset or receive failure" ;;
    *) echo "curl exit code $1" ;;
  esac
}

http_error() {  # http_error CODE URL: exits with a message for an HTTP failure
  case $1 in
    401 | 403) die "HTTP $1 for $2: access denied; pass a valid Hugging Face token with --token or HF_TOKEN" ;;
    404) die "HTTP 404: not found: $2" ;;
    *) die "HTTP $1 for $2" ;;
  esac
}

remote_size() {  # remote_size URL: prints the Content-Length of the final response of a HEAD
  local out rc=0 line len="" linked="" code=""
  out=$(curl --silent --head --location --config - --write-out 'ds4-status:%{http_code}\n' "$1" \
    <<<"$auth_cfg") || rc=$?
  ((rc == 0)) || die "cannot reach $1: $(curl_reason "$rc")"
  shopt -s nocasematch
  while IFS= read -r line; do
    line=${line%$'\r'}
    case $line in
      http/*) len="" ;;
      content-length:*) len=${line#*:}; len=${len// /} ;;
      x-linked-size:*) linked=${line#*:}; linked=${linked// /} ;;
      ds4-status:*) code=${line#*:} ;;
    esac
  done <<<"$out"
  shopt -u nocasematch
  [[ $code == 2?? ]] || http_error "$code" "$1"
  [[ -n $len ]] || len=$linked
  [[ $len =~ ^[0-9]+$ && $len -gt 0 ]] || die "the server reported no size for $1"
  echo "$len"
}

fetch() {  # fetch FILE: downloads DIR/FILE unless already complete
  local file=$1 url="$base_url/$1" out="$dir/$1" part="$dir/$1.part" expected have rc=0 code
  expected=$(remote_size "$url") || exit 1
  if [[ -f $out ]]; then
    have=$(file_size "$out")
    if [[ $have == "$expected" ]]; then info "already complete: $out"; return; fi
    die "$out has $have bytes but the server reports $expected; delete it to download it again"
  fi
  have=0
  if [[ -f $part ]]; then have=$(file_size "$part"); fi
  if ((have > expected)); then
    die "$part ($have bytes) is larger than the file on the server ($expected bytes); delete it"
  fi
  if ((have < expected)); then
    if ((have > 0)); then
      info "resuming $file at byte $have of $expected"
    else
      info "downloading $file ($expected bytes) to $dir/"
    fi
    code=$(curl "$progress" --fail --location --continue-at - --config - --output "$part" \
      --write-out '%{http_code}' "$url" <<<"$auth_cfg") || rc=$?
    if ((rc == 22)); then http_error "$code" "$url"; fi
    if ((rc == 33)); then die "the server does not support resuming; delete $part and re-run"; fi
    if ((rc != 0)); then
      die "download of $file failed ($(curl_reason "$rc")); the partial file $part is kept, re-run the same command to resume"
    fi
    have=$(file_size "$part")
  fi
  if [[ $have != "$expected" ]]; then
    die "size mismatch for $file: got $have bytes, the server reported $expected; $part is kept (re-run to resume, or delete it)"
  fi
  mv -f "$part" "$out"
  info "saved $out"
}

# Refuse to replace a real file at ./ds4flash.gguf before spending hours on a download.
if ((link)) && [[ -e ds4flash.gguf && ! -L ds4flash.gguf ]]; then
  die "./ds4flash.gguf exists and is not a symlink; move it away first"
fi
mkdir -p "$dir" || die "cannot create $dir"
for f in "${files[@]}"; do fetch "$f"; done

if ((link)); then
  ln -sfn "$dir/${files[0]}" ds4flash.gguf
  info "./ds4flash.gguf -> $dir/${files[0]}"
elif [[ $target == mtp ]]; then
  info "MTP is optional: enable it with --mtp $dir/$f_mtp (./ds4flash.gguf unchanged)"
else
  info "./ds4flash.gguf unchanged (PRO Q4 split pieces are selected explicitly)"
fi
