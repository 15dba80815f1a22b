#!/usr/bin/env bash
# Installs what clustertwin needs on Debian 12 (bookworm) from Debian's packages. Idempotent:
# packages already present are skipped, so a second run costs seconds. Needs root (or sudo).
#   tools/install-deps.sh          build + test dependencies
#   tools/install-deps.sh --build  only what the build needs
set -euo pipefail
build=(cmake ninja-build g++ pkg-config ccache
       libgtest-dev libgmock-dev libbenchmark-dev
       nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libfmt-dev libceres-dev libsqlite3-dev
       libopenmpi-dev openmpi-bin
       python3 python3-dev pybind11-dev python3-pybind11)
# python3-dev and pybind11 build the Python module (python/); python3 also runs its tests, and
# reads a sweep database mid-run in the kill -9 test (tests/cli/sweep_test.sh).
test=(clang libclang-rt-14-dev clang-format librapidcheck-dev chromium slurmctld slurm-client)
want=("${build[@]}")
[[ ${1:-} == --build ]] || want+=("${test[@]}")
# Node.js + npm build the report's chart bundle (web/); a machine may have them from elsewhere.
command -v node >/dev/null && command -v npm >/dev/null || want+=(nodejs npm)
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#want[@]} packages present"
  exit 0
fi
SUDO=""
if [[ $(id -u) != 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
