#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (preset "fuzz") and runs each for SECONDS (default 20)
# starting from the checked-in corpus. A crash leaves its input in build/fuzz/ and fails.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
cmake --preset fuzz >/dev/null
cmake --build build/fuzz --target fuzz_units fuzz_scenario fuzz_model fuzz_trace fuzz_report fuzz_calibration fuzz_sweep -j"$(nproc)"
for t in units scenario model trace report calibration sweep; do
  mkdir -p build/fuzz/corpus-$t
  cp -n tests/fuzz/corpus/$t/* build/fuzz/corpus-$t/ 2>/dev/null || true
  (cd build/fuzz && ./tests/fuzz/fuzz_$t -max_total_time="$secs" -max_len=4096 -print_final_stats=0 \
      corpus-$t ../../tests/fuzz/corpus/$t 2>&1 | tail -n 2)
done
echo "fuzz: no crash"
