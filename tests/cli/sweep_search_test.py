#!/usr/bin/env python3
"""A sweep point with `search:` (docs/sweep.md §search inside a sweep): each row's best_layout is
the winner `clustertwin search` finds for that point's request, and the row's step time is that of
`clustertwin train` with the winner's layout. Usage: sweep_search_test.py CLUSTERTWIN SWEEP WORKDIR"""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

bin_, sweep_file, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)


def run(*args):
    return subprocess.run([bin_, "-q", *args], check=True, capture_output=True, text=True).stdout


def fail(msg):
    sys.exit("FAIL: " + msg)


run("sweep", sweep_file, "--db", "s.db", "--threads", "2")
db = sqlite3.connect("s.db")
rows = db.execute('select id, "cluster", status, error, best_layout, step_time_s, result_json '
                  'from points order by id').fetchall()
if len(rows) != 2:
    fail("expected 2 points, got %d" % len(rows))
common = ["--model", "llama3.1-8b", "--global-batch", "16", "--seq-len", "4096"]
for pid, cluster, status, error, layout, step, result in rows:
    if status != "ok":
        fail("point %d: %s" % (pid, error))
    searched = json.loads(run("search", "--cluster", cluster, *common, "--zero-stages", "1,3",
                              "--confirm", "2", "--threads", "1", "--json", "-"))["search"]
    if layout != searched["best"][0]["layout"]:
        fail("point %d: best_layout %r, search's winner %r" %
             (pid, layout, searched["best"][0]["layout"]))
    mine = json.loads(result)["search"]
    for key in ("candidates", "valid", "feasible"):
        if mine[key] != searched[key]:
            fail("point %d: search.%s %r, `clustertwin search` %r" %
                 (pid, key, mine[key], searched[key]))
    if [b["layout"] for b in mine["best"]] != [b["layout"] for b in searched["best"]]:
        fail("point %d: the row's leaders differ from `clustertwin search`'s" % pid)
    # "TP2 PP1 DP4 mb1 zero1 bf16 recompute none" -> train's flags.
    m = re.fullmatch(r"TP(\d+) PP(\d+)(?: VPP(\d+))?(?: CP(\d+))?(?: EP(\d+))? DP(\d+) mb(\d+) "
                     r"zero(\d) (\w+) recompute (\S+)", layout)
    if not m:
        fail("point %d: unexpected layout %r" % (pid, layout))
    tp, pp, vpp, cp, ep, dp, mb, zero, prec, rc = m.groups()
    flags = ["--tp", tp, "--pp", pp, "--vpp", vpp or "1", "--cp", cp or "1", "--ep", ep or "1",
             "--dp", dp, "--micro-batch", mb, "--zero", zero,
             "--precision", {"nvfp4": "fp4"}.get(prec, prec)]
    if rc in ("none", "full"):
        flags += ["--recompute", rc]
    else:
        flags += ["--recompute", "selective", "--recompute-modules", rc]
    trained = json.loads(run("train", "--cluster", cluster, *common, *flags,
                             "--json", "-"))["training"]
    if abs(trained["step_time_s"] - step) > 1e-9 * step:
        fail("point %d: step_time_s %r, train with %s gives %r" %
             (pid, step, layout, trained["step_time_s"]))
    print("ok: point %d (%s): %s, step %.4g s as train runs it" % (pid, cluster, layout, step))
