#!/usr/bin/env python3
"""Property test of the CLI's numeric flags (issue 19).

Throws numbers -- 0, negatives, 2^31, 2^63, 1e308, NaN, infinity, junk and random values -- at
every numeric flag of every verb (found in each verb's --help: options typed INT, UINT or FLOAT)
and checks the one property users rely on: a run either succeeds (exit 0) with finite figures,
or refuses the input (exit 2) with a message. Never a signal, a timeout, an internal error
(exit 1) or a sanitizer report.

The sample is seeded (the seed is printed; --seed replays it) and sized for CI: --runs runs in
all, --jobs at a time, spread over the verbs (one flag of each verb in turn, the flags of a
verb in the seed's order), so that a short sample touches every verb.
Usage: flag_property.py CLUSTERTWIN [--seed N] [--runs N] [--jobs N] [--timeout S]
"""
import argparse
import os
import random
import re
import subprocess
import sys

from cli_property import run_case, run_sample, spread

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A quick, valid run of each verb; the flag under test is appended (so it overrides a default).
BASE = {
    ('describe',): ['gb300-nvl72*1'],
    ('collective',): ['--cluster', 'gb300-nvl72*1', '--max-bytes', '1M', '--model', 'analytical'],
    ('train',): ['--cluster', 'hgx-h100*2', '--model', 'llama3.1-8b', '--tp', '8',
                 '--comm', 'analytical'],
    ('search',): ['--cluster', 'hgx-h100*1', '--model', 'llama3.1-8b', '--threads', '1'],
    ('serve',): ['--cluster', 'hgx-h200*1', '--model', 'llama3.1-8b', '--tp', '1',
                 '--requests', '100', '--rate', '2', '--threads', '1'],
    ('power',): ['--cluster', 'hgx-h100*2', '--model', 'llama3.1-8b', '--tp', '8',
                 '--comm', 'analytical'],
    ('schedule',): ['--cluster', 'gb300-nvl72*2', '--days', '1'],
    ('goodput',): ['--cluster', 'gb300-nvl72*2', '--days', '1', '--model', 'llama3.1-8b',
                   '--tp', '8', '--pp', '1'],
    ('export',): ['slurm', '--cluster', 'gb300-nvl72*1'],
    ('model', 'show'): ['gpt', '--layers', '2', '--hidden', '256', '--heads', '4'],
    # {tmp}: a directory of the run's own (the sweep's database, the profile written).
    ('sweep',): [os.path.join(SRC, 'tests/cli/sweep/tiny.yaml'), '--db', '{tmp}/tiny.db'],
    ('calibrate',): ['--cluster', 'hgx-h100*2',
                     os.path.join(SRC, 'tests/validation/data/calibration/h100_2x8_all_reduce.txt'),
                     '--out', '{tmp}/profile.yaml'],
}
# Verbs whose valid run is long (a fit with cross-validation; a sweep of 8 training points):
# their timeout is this many times --timeout. A hang still fails.
SLOW = {('calibrate',): 6, ('sweep',): 4}

SPECIAL = ['0', '-1', '1', '0.5', '2147483648', '4294967304', '9223372036854775807',
           '9223372036854775808', '-9223372036854775809', '1e308', '-1e308', '1e-300', 'nan',
           'inf', '-inf', '12abc', '0x10', '']

OPTION = re.compile(r'^\s+(?:-\w,\s*)?(--[a-z][a-z0-9-]*)(?:,\s*-\w)?\s+(INT|UINT|FLOAT)\b')


def numeric_flags(binary, verb):
    out = subprocess.run([binary, *verb, '--help'], capture_output=True, text=True, timeout=60)
    flags = []
    for line in out.stdout.splitlines():
        m = OPTION.match(line)
        if m and m.group(1) not in ('--help',):
            flags.append(m.group(1))
    return flags


def random_value(rng):
    if rng.random() < 0.6:
        return rng.choice(SPECIAL)
    kind = rng.randrange(3)
    if kind == 0:
        return str(rng.randint(-10, 10) * 10 ** rng.randint(0, 20))
    if kind == 1:
        return repr(rng.uniform(-1, 1) * 10.0 ** rng.randint(-12, 308))
    return str(rng.randint(-3, 100000))


def run_one(binary, verb, flag, value, timeout):
    args = [binary, '--quiet', *verb, *BASE[verb], f'{flag}={value}']
    return run_case(args, timeout * SLOW.get(verb, 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('binary')
    ap.add_argument('--seed', type=int, default=19)
    ap.add_argument('--runs', type=int, default=160)
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--timeout', type=float, default=60)
    a = ap.parse_args()
    a.binary = os.path.abspath(a.binary)
    rng = random.Random(a.seed)
    flags = spread([[(verb, f) for f in numeric_flags(a.binary, verb)] for verb in BASE], rng)
    if not flags:
        print('no numeric flags found in --help: the help format changed?')
        return 1
    cases = []
    for i in range(a.runs):
        verb, flag = flags[i % len(flags)]
        cases.append((verb, flag, random_value(rng)))
    print(f'flag property test: seed {a.seed}, {len(flags)} numeric flags of {len(BASE)} verbs, '
          f'{len(cases)} runs', flush=True)
    return run_sample(cases, lambda c: run_one(a.binary, *c, a.timeout), a.jobs, a.seed,
                      lambda c: ' '.join(repr(x) if ' ' in x or not x else x
                                         for x in [*c[0], *BASE[c[0]], f'{c[1]}={c[2]}']))


if __name__ == '__main__':
    sys.exit(main())
