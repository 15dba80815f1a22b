#!/usr/bin/env python3
"""Property test of scenario files: hostile values at every key of every workload block.

flag_property.py throws numbers at the verbs' flags; this does the same at the scenario form of
each verb (`clustertwin run FILE`): for every key of `workload.training`, `workload.inference`,
`workload.goodput` and `workload.schedule` (read from docs/cli.md, "Scenario file keys", which is
generated from the field tables) and for the inline cluster's numbers, it writes a small valid
scenario with that key set to a hostile YAML value -- 0, negatives, 2^31, 2^63, 1e308, 1e-300,
.nan, .inf, junk strings, lists, mappings, null -- and checks the property users rely on: the run
succeeds (exit 0) with finite figures, or refuses the file (exit 2) with a message that names
the file and line. Never a signal, a timeout, an internal error (exit 1) or a sanitizer report.

The sample is seeded (the seed is printed; --seed replays it) and spread over the blocks (one key
of each block in turn, the keys of a block in the seed's order): a short sample touches each.
Usage: scenario_property.py CLUSTERTWIN [--seed N] [--runs N] [--jobs N] [--timeout S]
"""
import argparse
import os
import random
import re
import sys

from cli_property import run_case, run_sample, spread

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A quick, valid block of each workload; the key under test replaces or joins it.
BASE = {
    'training': ('hgx-h100*2', {'model': 'llama3.1-8b', 'tp': '8', 'comm': 'analytical'}),
    'inference': ('hgx-h200*1', {'model': 'llama3.1-8b', 'tp': '1', 'isl': '128', 'osl': '16',
                                 'scenario': 'offline', 'threads': '1'}),
    'goodput': ('gb300-nvl72*2', {'model': 'llama3.1-8b', 'tp': '8', 'pp': '1', 'days': '1'}),
    'schedule': ('gb300-nvl72*2', {'days': '1'}),
}
# The inline cluster's keys (docs/scenarios.md, cluster files), under a training block.
CLUSTER = {'system': 'gb300-nvl72', 'count': '2', 'scale_out.switch': 'q3400',
           'scale_out.tiers': '2', 'scale_out.oversubscription': '["1:1"]'}

HOSTILE = ['0', '-1', '1', '0.5', '2147483648', '4294967304', '9223372036854775807',
           '9223372036854775808', '-9223372036854775809', '1e308', '-1e308', '1e-300', '.nan',
           '.inf', '-.inf', '"12abc"', '"0x10"', '""', '[1, 2]', '{a: 1}', 'null', 'true',
           '"1e999"', '"-5 s"', '"1e308 s"', '"1e308W"', '"1:0"', '"0:1"']


def block_keys(docs):
    """Keys of each workload block from docs/cli.md's generated tables."""
    keys, block = {}, None
    for line in open(docs, encoding='utf-8'):
        m = re.match(r'^### `workload\.(\w+)`', line)
        if m:
            block = m.group(1)
            keys[block] = []
            continue
        if line.startswith('## '):
            block = None
        m = re.match(r'^\| `(\w+)` \|', line)
        if block and m:
            keys[block].append(m.group(1))
    return keys


def scenario_text(block, key, value):
    cluster, fields = BASE.get(block, BASE['training'])
    fields = dict(fields)
    lines = []
    if block == 'cluster':
        inline = dict(CLUSTER)
        inline[key] = value
        lines.append('cluster:')
        scale_out = {k.split('.', 1)[1]: v for k, v in inline.items() if k.startswith('scale_out.')}
        for k, v in inline.items():
            if not k.startswith('scale_out.'):
                lines.append(f'  {k}: {v}')
        lines.append('  scale_out:')
        for k, v in scale_out.items():
            lines.append(f'    {k}: {v}')
        block = 'training'
        fields = dict(BASE['training'][1])
    else:
        lines.append(f'cluster: "{cluster}"')
        fields[key] = value
    lines.append('workload:')
    lines.append(f'  {block}:')
    for k, v in fields.items():
        lines.append(f'    {k}: {v}')
    return '\n'.join(lines) + '\n'


def run_one(binary, block, key, value, timeout):
    text = scenario_text(block, key, value)

    def prepare(tmp):
        with open(os.path.join(tmp, 'scenario.yaml'), 'w', encoding='utf-8') as f:
            f.write(text)

    # The door's word for a scenario file is file:line (DESIGN.md section 4).
    return run_case([binary, '--quiet', 'run', '{tmp}/scenario.yaml'], timeout, prepare,
                    where=r'scenario\.yaml:\d+')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('binary')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--runs', type=int, default=200)
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--timeout', type=float, default=60)
    a = ap.parse_args()
    a.binary = os.path.abspath(a.binary)
    rng = random.Random(a.seed)
    keys = block_keys(os.path.join(SRC, 'docs/cli.md'))
    groups = [[(b, k) for k in keys.get(b, []) if k != 'model' or b != 'schedule'] for b in BASE]
    groups.append([('cluster', k) for k in CLUSTER])
    cases = spread(groups, rng)
    if not cases:
        print('no scenario keys found in docs/cli.md: the format changed?')
        return 1
    runs = [(b, k, rng.choice(HOSTILE)) for b, k in (cases[i % len(cases)] for i in range(a.runs))]
    print(f'scenario property test: seed {a.seed}, {len(cases)} keys, {len(runs)} runs', flush=True)
    return run_sample(runs, lambda c: run_one(a.binary, *c, a.timeout), a.jobs, a.seed,
                      lambda c: '\n    ' + scenario_text(*c).strip().replace('\n', '\n    '))

if __name__ == '__main__':
    sys.exit(main())
