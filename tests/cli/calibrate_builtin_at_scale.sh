#!/bin/sh
# `calibrate --builtin at-scale` reproduces what the repository ships, byte for byte:
# catalog/collectives/at-scale.yaml and moe-a2a.yaml (the verb fits their figures on the cases in
# tests/validation/data/collective, recipe catalog/calibration/at-scale.yaml, and rewrites only
# the values). The cases are in the repository, so this never skips.
# Usage: calibrate_builtin_at_scale.sh BIN REPO_ROOT WORKDIR
set -eu
bin=$1 root=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
"$bin" -q calibrate --builtin at-scale --reference "$root/tests/validation/data/collective" \
  --out-dir "$work" --report "$work/report.html" > "$work/summary.txt"
tail -1 "$work/summary.txt"
status=0
. "$(dirname "$0")/calibrate_builtin_common.sh"
# --report writes the page a user's fit writes: inputs with their SHA-256, the cases measured vs predicted, residuals, figures and every case.
report_has "$work/report.html" "<h2>Inputs</h2>" "at_scale.csv" "at-scale-cases" \
  "Measured vs predicted by case" "<h3>Residuals</h3>" "<h3>Figures</h3>" "S0207"
same_as_repository "$root" "$work" at-scale catalog/collectives/at-scale.yaml \
  catalog/collectives/moe-a2a.yaml
exit $status
