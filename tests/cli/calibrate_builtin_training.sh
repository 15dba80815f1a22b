#!/bin/sh
# `calibrate --builtin training` reproduces what the repository ships, byte for byte:
# catalog/calibration/training.yaml (the step model's fp8_overhead and host_per_expert_gemm, fitted
# on the training validation cases catalog/calibration/training-cases.yaml, each source weighted
# equally, with the leave-one-source-out ranges written into its sources). The cases are in the
# catalog, so this never skips.
# Usage: calibrate_builtin_training.sh BIN REPO_ROOT WORKDIR
set -eu
bin=$1 root=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
"$bin" -q calibrate --builtin training --out-dir "$work" --report "$work/report.html" \
  > "$work/summary.txt"
cat "$work/summary.txt"
status=0
. "$(dirname "$0")/calibrate_builtin_common.sh"
# --report writes the page a user's fit writes: the case file with its SHA-256, the cases measured
# vs predicted, residuals, the constants and every case with its leave-one-source-out prediction.
report_has "$work/report.html" "<h2>Inputs</h2>" "training-cases.yaml" "training-cases" \
  "Measured vs predicted by case" "<h3>Residuals</h3>" "<h3>Constants</h3>" \
  "training.host_per_expert_gemm" "S0182 Qwen3-235B EP8 NCCL A2A" "source left out"
same_as_repository "$root" "$work" training catalog/calibration/training.yaml
exit $status
