#!/usr/bin/env bash
# A run killed while it writes its output leaves the previous file intact (issue 19). The kill
# is made deterministic with a file-size limit: the kernel stops the process with SIGXFSZ at the
# first write past 64 KiB, in the middle of the multi-megabyte HTML report. Written in place,
# the old report would be truncated; written to a temporary and renamed, it is untouched.
# Usage: killed_while_writing.sh CLUSTERTWIN RESULTS_JSON WORKDIR
set -u
bin=$1 results=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 2
printf 'the previous report\n' >report.html
(ulimit -f 64; exec "$bin" report --from "$results" --out report.html) 2>err.txt
rc=$?
if [ "$rc" -eq 0 ]; then
  echo "FAIL: the run was not stopped (rc 0): is the report smaller than 64 KiB?"
  exit 1
fi
if [ "$(cat report.html)" != "the previous report" ]; then
  echo "FAIL: the previous file was lost (rc $rc); it now holds $(wc -c <report.html) bytes"
  exit 1
fi
echo "ok: the run stopped (rc $rc) and report.html is intact"
