#!/usr/bin/env bash
# Quick start, step 2: every test. Installs dependencies, builds the dev preset (Debug, ASan +
# UBSan, -Werror), runs unit, property, golden, validation, CLI and browser tests, checks the
# formatting and the layer order, and fuzzes the parsers briefly. CI runs exactly this (.ci/run).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
jobs=$(nproc)
tools/install-deps.sh
echo "== build (dev: ASan/UBSan)"
cmake --preset dev >/dev/null
cmake --build build/dev -j"$jobs"
echo "== tests"
ctest --test-dir build/dev --output-on-failure -j"$jobs"
echo "== format"
tools/check_format.sh
echo "== fuzz (libFuzzer, clang)"
tools/fuzz.sh 20
echo "== all tests passed"
