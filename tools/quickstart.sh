#!/usr/bin/env bash
# Quick start, step 1: install dependencies, build the release preset (the CLI and the Python
# module), run the flagship scenario (the Azure NDv6 GB300 cluster) and leave
# clustertwin-report.html in the current directory. Python finds the module through
# clustertwin.pth in the user's site-packages (`python3 -m site --user-site`), which names
# build/release/python: `python3 -c "import clustertwin"` works from any directory afterwards.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/tools/install-deps.sh" --build
cmake -S "$here" --preset release >/dev/null
cmake --build "$here/build/release" --target clustertwin clustertwin_python -j"$(nproc)"
python=/usr/bin/python3  # Debian's, the one the module is built for (CMakeLists.txt)
site=$("$python" -m site --user-site)
mkdir -p "$site"
echo "$here/build/release/python" >"$site/clustertwin.pth"
"$python" -c "import clustertwin"
echo "quickstart: python3 -c 'import clustertwin' works ($site/clustertwin.pth)" >&2
"$here/build/release/apps/clustertwin/clustertwin" "$@"
