#!/bin/sh
# `calibrate --builtin serving` reproduces what the repository ships, byte for byte:
# catalog/calibration/serving.yaml (the verb fits the serving step model's constants on the cases
# catalog/calibration/serving-cases.yaml and rewrites only the values). The cases are in the
# catalog, so this never skips.
# Usage: calibrate_builtin_serving.sh BIN REPO_ROOT WORKDIR
set -eu
bin=$1 root=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
"$bin" -q calibrate --builtin serving --out-dir "$work" --report "$work/report.html" \
  > "$work/summary.txt"
cat "$work/summary.txt"
status=0
. "$(dirname "$0")/calibrate_builtin_common.sh"
report_has "$work/report.html" "<h2>Inputs</h2>" "serving-cases.yaml" "serving-cases" \
  "<h3>Every replay</h3>" "VC0154" "S0099" "trtllm-blog3"
same_as_repository "$root" "$work" serving catalog/calibration/serving.yaml
exit $status
