#!/bin/sh
# The built-in compute calibration is produced by `calibrate --builtin compute` and is
# byte-identical when regenerated: catalog/compute/*.yaml and the held-out validation tables.
# Needs the measured tables (../shared/reference/measured); without them the test is skipped
# (exit 77), as the repository builds and tests without ../shared.
# Usage: calibrate_builtin_compute.sh BIN REPO_ROOT REFERENCE WORKDIR
set -eu
bin=$1 root=$2 ref=$3 work=$4
if [ ! -d "$ref/measured/h100" ]; then
  echo "skipped: no $ref/measured (the reference tables are not in the repository)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
"$bin" -q calibrate --builtin compute --reference "$ref" --out-dir "$work" \
  --report "$work/report.html" > "$work/summary.txt"
status=0
. "$(dirname "$0")/calibrate_builtin_common.sh"
# --report writes the page a user's fit writes: inputs with their SHA-256, per GPU the kernel tables' section.
report_has "$work/report.html" "<h2>Inputs</h2>" "gemm_bfloat16.csv" "<h2>Kernel tables on h100</h2>" \
  "<h2>Kernel tables on gb300</h2>" "Measured vs predicted by shape" "<h3>Residuals</h3>" \
  "<h3>Fitted grids</h3>"
rels=
for f in "$root"/catalog/compute/*.yaml "$root"/tests/validation/data/compute_*_holdout.csv; do
  rels="$rels ${f#"$root"/}"
done
# shellcheck disable=SC2086 # the paths hold no spaces
same_as_repository "$root" "$work" compute $rels > "$work/identical.txt"
grep -v ': identical$' "$work/identical.txt" || true
n=$(ls "$work"/catalog/compute/*.yaml | wc -l)
[ "$n" -eq "$(ls "$root"/catalog/compute/*.yaml | wc -l)" ] || { echo "error: $n files written"; status=1; }
[ $status -eq 0 ] && echo "catalog/compute: $n files and 6 held-out tables byte-identical"
exit $status
