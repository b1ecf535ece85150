#!/usr/bin/env bash
# bench/active_bytes.sh MODEL.gguf [DS4_GGUF]: weight bytes one decoded token reads, for
# ds4-cpu-bench --active-bytes (bench/cpu.md). Parses the tensor table of `ds4-gguf info`:
#   * routed experts (*_exps): n_expert_used / n_expert of the tensor (the experts a token picks);
#   * token_embd and the hash-routing table ffn_gate_tid2eid: one token's row (bytes / n_vocab);
#   * every other tensor (attention, compressors, indexer, shared expert, router, HC, output head):
#     all of it, since each is applied to every token.
# Prints the byte count alone on stdout; with -v also the breakdown on stderr.
set -euo pipefail
verbose=0
if [[ "${1:-}" == "-v" ]]; then
  verbose=1
  shift
fi
model="${1:?usage: active_bytes.sh [-v] MODEL.gguf [path/to/ds4-gguf]}"
tool="${2:-$(dirname "$0")/../build/bin/ds4-gguf}"

"$tool" info "$model" | awk -v verbose="$verbose" '
  /expert_used_count/ { used = $NF }
  / deepseek4\.expert_count / { total = $NF }
  / deepseek4\.vocab_size / { vocab = $NF }
  /^tensors:/ { in_table = 1; next }
  in_table && $1 ~ /^[0-9]+$/ {
    name = $2; bytes = $(NF - 1)
    if (name ~ /_exps\./) { part = "experts"; b = bytes * used / total }
    else if (name ~ /^token_embd\./ || name ~ /ffn_gate_tid2eid/) { part = "per-token rows"; b = bytes / vocab }
    else if (name ~ /^output\./) { part = "output head"; b = bytes }
    else { part = "other dense"; b = bytes }
    sum[part] += b; all[part] += bytes; active += b; file += bytes
  }
  END {
    if (used == 0 || total == 0 || vocab == 0) { print "active_bytes.sh: metadata not found" > "/dev/stderr"; exit 1 }
    if (verbose) {
      for (p in sum) printf("%-15s %14.0f of %14.0f bytes\n", p, sum[p], all[p]) > "/dev/stderr"
      printf("%-15s %14.0f of %14.0f tensor bytes (experts %d of %d)\n", "active", active, file, used, total) > "/dev/stderr"
    }
    printf("%.0f\n", active)
  }'
