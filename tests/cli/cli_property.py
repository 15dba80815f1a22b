"""What the CLI's property tests (flag_property.py, scenario_property.py) share: running one case
under a timeout in a directory of its own, judging it, and running a seeded sample of cases.

The property: a run either succeeds (exit 0) with finite figures, or refuses its input (exit 2)
with a message users can read. Never a signal, a timeout, an internal error (exit 1) or a
sanitizer report.
"""
import concurrent.futures
import re
import shutil
import subprocess
import tempfile

# "error: --gpus: expected an integer >= 1, got 0", not CLI11's "Value 0 not in range 0.000000
# to <309 digits>" or "Could not convert".
UNREADABLE = re.compile(r'\d{30}|Could not convert|not in range 0\.000000')
NONFINITE = re.compile(r'(?<![A-Za-z])(nan|-?inf)(?![A-Za-z])', re.IGNORECASE)


def run_case(args, timeout, prepare=None, where=None):
    """Runs `args` in a fresh directory ({tmp} in an argument is that directory; `prepare(tmp)`
    may write files there first) and judges it: returns (outcome, detail), outcome 'ok' or
    'refused' when the property holds. `where`: a regex a refusal's message must match (a
    scenario's file:line)."""
    tmp = tempfile.mkdtemp(prefix='ct-property-')
    try:
        if prepare:
            prepare(tmp)
        p = subprocess.run([a.replace('{tmp}', tmp) for a in args], capture_output=True,
                           text=True, timeout=timeout, errors='replace', cwd=tmp)
    except subprocess.TimeoutExpired:
        return 'timeout', ''
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    err = p.stderr
    if p.returncode < 0:
        return f'signal {-p.returncode}', err[-400:]
    if 'runtime error:' in err or 'AddressSanitizer' in err or 'LeakSanitizer' in err:
        return 'sanitizer report', err[-400:]
    if p.returncode == 0:
        if NONFINITE.search(p.stdout):
            line = next(l for l in p.stdout.splitlines() if NONFINITE.search(l))
            return 'non-finite output', line[:200]
        return 'ok', ''
    if p.returncode == 2:
        if 'error:' not in err or UNREADABLE.search(err):
            return 'exit 2 without a clear message', err[-300:]
        if where and not re.search(where, err):
            return 'exit 2 without file:line', err[-300:]
        return 'refused', ''
    return f'exit {p.returncode}', err[-400:]


def spread(groups, rng):
    """The cases of `groups` (lists: a verb's flags, a block's keys) in an order that a short
    sample covers evenly: each group shuffled by `rng`, then one case of each group in turn. The
    first N runs of a sample touch every group (a CI sample of 60 once reached only the first
    block), and another seed reaches other cases of each group."""
    shuffled = []
    for g in groups:
        g = list(g)
        rng.shuffle(g)
        shuffled.append(g)
    out = []
    for i in range(max((len(g) for g in shuffled), default=0)):
        out += [g[i] for g in shuffled if i < len(g)]
    return out


def run_sample(cases, run, jobs, seed, describe):
    """Runs `run(case)` -> (outcome, detail) over `cases`, `jobs` at a time; prints the outcomes
    and each failure (`describe(case)` says what ran). Returns the exit status."""
    counts, failures = {}, []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        futs = [(c, ex.submit(run, c)) for c in cases]
        for case, fut in futs:
            outcome, detail = fut.result()
            counts[outcome] = counts.get(outcome, 0) + 1
            if outcome not in ('ok', 'refused'):
                failures.append((outcome, case, detail))
    print('outcomes: ' + ', '.join(f'{k} {v}' for k, v in sorted(counts.items())))
    for outcome, case, detail in failures:
        print(f'FAIL ({outcome}): ' + describe(case))
        if detail:
            print('    ' + detail.strip().replace('\n', '\n    '))
    if failures:
        print(f'{len(failures)} of {len(cases)} runs broke the property (seed {seed})')
        return 1
    print('every run exited 0 with finite output or 2 with a message')
    return 0
