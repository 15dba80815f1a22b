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
# --report writes the page a user's fit writes: inputs with their SHA-256, the cases measured vs predicted, residuals, figures and every case.
for want in "<h2>Inputs</h2>" "at_scale.csv" "at-scale-cases" "Measured vs predicted by case" "<h3>Residuals</h3>" "<h3>Figures</h3>" "S0207"; do
  grep -qF "$want" "$work/report.html" || { echo "error: the report lacks '$want'"; status=1; }
done

for rel in catalog/collectives/at-scale.yaml catalog/collectives/moe-a2a.yaml; do
  if [ ! -f "$work/$rel" ]; then
    echo "error: $rel not written"
    status=1
  elif ! cmp -s "$root/$rel" "$work/$rel"; then
    echo "error: $rel differs from what calibrate --builtin at-scale writes:"
    diff "$root/$rel" "$work/$rel" | head -20
    status=1
  else
    echo "$rel: identical"
  fi
done
exit $status
