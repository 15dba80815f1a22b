#!/bin/sh
# `calibrate --builtin collectives` on the H100 table reproduces what the repository ships, byte
# for byte: catalog/collectives/h100.yaml (which the verb generated, and checks reads back before
# writing) and the measured rows tests/validation/data/collective/h100_nccl.csv. The other five
# files are regenerated the same way (`--out-dir .` without --only); one file keeps the test's time
# in bounds. Needs ../shared/reference/measured (skipped, exit 77, without).
# Usage: calibrate_builtin_collectives.sh BIN REPO_ROOT REFERENCE WORKDIR
set -eu
bin=$1 root=$2 ref=$3 work=$4
if [ ! -f "$ref/measured/h100/nccl.csv" ]; then
  echo "skipped: no $ref/measured (the reference tables are not in the repository)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
"$bin" -q calibrate --builtin collectives --only h100 --reference "$ref" --out-dir "$work" \
  --report "$work/report.html" > "$work/summary.txt"
cat "$work/summary.txt"
status=0
. "$(dirname "$0")/calibrate_builtin_common.sh"
# --report writes the page a user's fit writes: inputs with their SHA-256, per op family the
# collective fit's section.
report_has "$work/report.html" "<h2>Inputs</h2>" "nccl.csv" "<h2>Collectives on h100</h2>" \
  "Residual"
same_as_repository "$root" "$work" collectives tests/validation/data/collective/h100_nccl.csv \
  catalog/collectives/h100.yaml
exit $status
