#!/usr/bin/env bash
# Installs every Debian package the build and the tests need, and nothing that is already there.
# Safe to run repeatedly; `make build`, `make test` and `make run` call it first.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config python3
  clang clang-format libclang-rt-14-dev   # libFuzzer and sanitizer runtimes for clang
  libgtest-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libcpp-httplib-dev   # flags, JSON, ds4-server's HTTP
  libssl-dev   # SHA-1 (libcrypto) for the disk KV cache
  libedit-dev tmux curl   # the ds4 REPL (line editing), its pty test, download_model.sh
  ccache   # compiler cache: CMakeLists.txt uses it when present (its directory: ~/.cache/ccache)
  libzmq3-dev cppzmq-dev   # ZeroMQ: distributed inference's data plane
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Node.js runs the independent reference tools (tokenizer oracle, GGUF parser cross-check). Any
# installed node >= 18 will do; Debian's package is the fallback.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi

if ((${#missing[@]} > 0)); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm oracles for the tests (pinned by tests/oracle/package-lock.json), never committed.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ ! -d "$root/tests/oracle/node_modules/@huggingface/gguf" ]]; then
  echo "setup: installing npm oracles into tests/oracle/node_modules"
  (cd "$root/tests/oracle" && npm ci --no-audit --no-fund --loglevel=error)
fi
# The OpenAI and Anthropic SDKs that drive ds4-server in tests/server (pinned by its
# package-lock.json).
if [[ ! -d "$root/tests/server/node_modules/openai" ||
      ! -d "$root/tests/server/node_modules/@anthropic-ai/sdk" ]]; then
  echo "setup: installing the openai and @anthropic-ai/sdk SDKs into tests/server/node_modules"
  (cd "$root/tests/server" && npm ci --no-audit --no-fund --loglevel=error)
fi
# The agent CLIs of the `clients` tests (Claude Code, Codex, opencode: native binaries, ~800 MB,
# pinned by tests/clients/package-lock.json). `npm install`, not `npm ci`: the lock holds the
# linux-x64 binary packages only (the registry here serves no other platforms' optional ones),
# which `npm ci` refuses as out of sync; `npm install` follows the lock and leaves it unchanged.
if [[ ! -x "$root/tests/clients/node_modules/.bin/claude" ||
      ! -x "$root/tests/clients/node_modules/.bin/codex" ||
      ! -x "$root/tests/clients/node_modules/.bin/opencode" ]]; then
  echo "setup: installing the agent CLIs into tests/clients/node_modules"
  (cd "$root/tests/clients" && npm install --no-audit --no-fund --loglevel=error)
fi
