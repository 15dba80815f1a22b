#!/usr/bin/env bash
# Quick start, step 1: install dependencies, build the release preset, run the flagship scenario
# (the Azure NDv6 GB300 cluster) and leave clustertwin-report.html in the current directory.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/tools/install-deps.sh" --build
cmake -S "$here" --preset release >/dev/null
cmake --build "$here/build/release" --target clustertwin -j"$(nproc)"
"$here/build/release/apps/clustertwin/clustertwin" "$@"
