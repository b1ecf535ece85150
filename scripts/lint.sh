#!/usr/bin/env bash
# Hygiene gates run by CI: clang-format, file length, include layering.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0

mapfile -t sources < <(git ls-files --cached --others --exclude-standard '*.h' '*.hpp' '*.cpp' '*.cu' '*.cuh')

# 1. Formatting (clang-format, .clang-format at the root). Generated .inc tables are exempt.
if ((${#sources[@]} > 0)); then
  format_log=$(mktemp)
  trap 'rm -f "$format_log"' EXIT
  if ! clang-format --dry-run --Werror "${sources[@]}" 2>"$format_log"; then
    echo "lint: clang-format differences (run 'make format'):"
    grep -E '^[^ ].*(warning|error)' "$format_log" | head -20
    status=1
  fi
fi

# 2. File length: warn above 800 lines, fail above 1,200 (generated .inc files exempt).
for f in "${sources[@]}"; do
  n=$(wc -l <"$f")
  if ((n > 1200)); then
    echo "lint: $f has $n lines (limit 1200): split it by responsibility"
    status=1
  elif ((n > 800)); then
    echo "lint: warning: $f has $n lines (target <= 800)"
  fi
done

# 3. Include layering (design/architecture.md §5.2).
if ! python3 scripts/check_layering.py; then
  echo "lint: include layering violated"
  status=1
fi

if ((status == 0)); then echo "lint: ok (${#sources[@]} files)"; fi
exit $status
