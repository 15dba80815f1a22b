#!/usr/bin/env bash
# Fails when a C++ file differs from .clang-format (clang-format 14, pinned by Debian 12).
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.h' '*.cpp')
bad=$(echo "$files" | xargs clang-format --dry-run 2>&1 | grep -c 'warning:' || true)
if [[ $bad != 0 ]]; then
  echo "$files" | xargs clang-format --dry-run 2>&1 | grep 'warning:' | cut -d: -f1 | sort -u
  echo "error: $bad formatting differences (run: git ls-files '*.h' '*.cpp' | xargs clang-format -i)"
  exit 1
fi
echo "format: clean"
