# Shared by the calibrate_builtin_*.sh tests (sourced, POSIX sh): what a built-in calibration
# run must have written. Each function adds to $status (0 when all is well) and says what differs.

# report_has FILE TEXT...: the HTML report holds every TEXT.
report_has() {
  page=$1
  shift
  for want in "$@"; do
    grep -qF "$want" "$page" || { echo "error: the report lacks '$want'"; status=1; }
  done
}

# same_as_repository ROOT WORK WHAT REL...: every REL (a path under the repository root ROOT)
# was written under WORK by `calibrate --builtin WHAT` and is byte-identical to ROOT's.
same_as_repository() {
  root=$1 work=$2 what=$3
  shift 3
  for rel in "$@"; do
    if [ ! -f "$work/$rel" ]; then
      echo "error: $rel not written"
      status=1
    elif ! cmp -s "$root/$rel" "$work/$rel"; then
      echo "error: $rel differs from what calibrate --builtin $what writes:"
      diff "$root/$rel" "$work/$rel" | head -20
      status=1
    else
      echo "$rel: identical"
    fi
  done
}
