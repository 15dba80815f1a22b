#!/usr/bin/env bash
# An option given an empty value (`--json "$OUT"` with OUT unset) is refused, exit 2 naming it:
# the library reads "" as "not given", so such a run went on without the option, exit 0 and no
# file written. Flags without a value are not concerned.
# Usage: empty_values.sh CLUSTERTWIN
set -u
bin=$1
fail=0
expect() {  # WANT ARGS...: exit 2 and WANT on stderr
  local want=$1
  shift
  err=$("$bin" "$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -ne 2 ] || [[ "$err" != *"$want"* ]]; then
    echo "FAIL: clustertwin $*: exit $rc, stderr: $err (expected exit 2 and '$want')"
    fail=1
  else
    echo "ok: $*"
  fi
}
train=(train --cluster hgx-h100*1 --model llama3.1-8b --tp 8 -q)
expect "--json: empty value (give one, or leave the option out for its default)" "${train[@]}" --json ""
expect "--calibration: empty value" "${train[@]}" --calibration ""
expect "--tokens: empty value" "${train[@]}" --tokens ""
expect "--report: empty value" --report "" describe hgx-h100*1
expect "the cluster argument: empty value" describe ""
expect "the file argument: empty value" run ""
exit $fail
