#!/bin/sh
# `calibrate --builtin collectives` on the H100 table: writes the measured rows byte-identical to
# tests/validation/data/collective/h100_nccl.csv, a catalog file that reads back (the verb checks
# it before writing), and a fit within 2 points of rms error, op by op, of the shipped
# catalog/collectives/h100.yaml. Needs ../shared/reference/measured (skipped, exit 77, without).
# Usage: calibrate_builtin_collectives.sh BIN REPO_ROOT REFERENCE WORKDIR
set -eu
bin=$1 root=$2 ref=$3 work=$4
if [ ! -f "$ref/measured/h100/nccl.csv" ]; then
  echo "skipped: no $ref/measured (the reference tables are not in the repository)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
"$bin" -q calibrate --builtin collectives --only h100 --reference "$ref" --out-dir "$work" \
  > "$work/summary.txt"
cat "$work/summary.txt"
status=0
rel=tests/validation/data/collective/h100_nccl.csv
if ! cmp -s "$root/$rel" "$work/$rel"; then
  echo "error: $rel differs from what calibrate --builtin collectives writes:"
  diff "$root/$rel" "$work/$rel" | head -20
  status=1
fi
yaml=catalog/collectives/h100.yaml
[ -f "$work/$yaml" ] || { echo "error: $yaml not written"; exit 1; }
rms() { sed -n "s/^  $2:  # .* rms error \([0-9.]*\)%.*/\1/p" "$1"; }
for op in all_reduce all_gather reduce_scatter all_to_all; do
  shipped=$(rms "$root/$yaml" $op)
  got=$(rms "$work/$yaml" $op)
  if [ -z "$got" ] || [ -z "$shipped" ]; then
    echo "error: no rms error line for $op"; status=1; continue
  fi
  if awk "BEGIN { exit !($got > $shipped + 2.0) }"; then
    echo "error: $op rms error $got% against the shipped file's $shipped%"; status=1
  else
    echo "$op: rms error $got% (shipped $shipped%)"
  fi
done
exit $status
