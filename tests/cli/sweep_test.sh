#!/usr/bin/env bash
# clustertwin sweep end to end (docs/sweep.md): the database is byte-identical for 1 and 2
# threads (and for 3 MPI ranks when mpirun is here); a sweep killed with SIGKILL mid-run and
# started again loses nothing, runs nothing twice and ends with the same bytes; a finished
# sweep run again runs nothing and leaves the file untouched.
# Usage: sweep_test.sh CLUSTERTWIN SWEEP_FILE WORKDIR [mpi|example]
set -euo pipefail
bin=$1 file=$2 work=$3 mode=${4:-}
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
points() { sed -nE 's/^sweep [^:]*: ([0-9]+) points.*/\1/p' "$1"; }
ran() { sed -nE 's/.*\(([0-9]+) run now, ([0-9]+) already.*/\1 \2/p' "$1"; }

"$bin" -q sweep "$file" --db two.db --threads 2 --csv two.csv > two.out
total=$(points two.out)
[[ $total -gt 0 ]] || fail "no points: $(cat two.out)"
[[ $(wc -l < two.csv) -eq $((total + 1)) ]] || fail "csv rows: $(wc -l < two.csv), expected $((total + 1))"

if [[ $mode == example ]]; then
  grep -q " 0 with an error" two.out || fail "points with an error: $(cat two.out)"
  echo "ok: $(cat two.out)"
  exit 0
fi

if [[ $mode == mpi ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
  mpirun --oversubscribe -np 3 "$bin" -q sweep "$file" --db mpi.db > mpi.out
  grep -q "on 3 rank" mpi.out 2>/dev/null || true
  cmp two.db mpi.db || fail "3 MPI ranks and 2 threads wrote different databases"
  echo "ok: mpirun -np 3 wrote the same bytes as 2 threads ($total points)"
  exit 0
fi

"$bin" -q sweep "$file" --db one.db --threads 1 > one.out
cmp one.db two.db || fail "1 and 2 threads wrote different databases"

# Kill -9 once at least one point is stored, then resume.
"$bin" -q sweep "$file" --db killed.db --threads 1 > /dev/null 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  if [[ -f killed.db ]] && python3 - killed.db <<'PY' 2>/dev/null; then break; fi
import sqlite3, sys
n = sqlite3.connect(sys.argv[1]).execute("select count(*) from points").fetchone()[0]
sys.exit(0 if n >= 1 else 1)
PY
  sleep 0.1
done
kill -9 $pid 2>/dev/null || fail "the sweep finished before it could be killed"
wait $pid 2>/dev/null || true
[[ -f killed.db ]] || fail "no database after the kill"
"$bin" -q sweep "$file" --db killed.db --threads 2 > resumed.out
read -r now before <<<"$(ran resumed.out)"
[[ $before -ge 1 && $before -lt $total ]] || fail "resume found $before points stored (expected 1..$((total - 1)))"
[[ $((now + before)) -eq $total ]] || fail "resume ran $now + found $before != $total points"
cmp killed.db two.db || fail "the resumed database differs from an uninterrupted run"

# Finished: a re-run does nothing and leaves the bytes alone.
cp two.db before.db
"$bin" -q sweep "$file" --db two.db > again.out
read -r now before <<<"$(ran again.out)"
[[ $now -eq 0 && $before -eq $total ]] || fail "a finished sweep ran $now points again"
cmp two.db before.db || fail "re-running a finished sweep changed its database"
echo "ok: $total points; 1 thread = 2 threads; killed after $before stored and resumed; re-run ran nothing"
