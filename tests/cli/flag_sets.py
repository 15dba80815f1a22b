#!/usr/bin/env python3
"""Every verb that runs a training job takes the same training flags (issue 18): the options of
`train` from the training field table (scenario/training.cpp) are options of `power`, `goodput`
and `search` too, with the same help, accepted values and default; and `run FILE` reads the same
fields as keys: each workload block of a scenario file (`workload.training`, `.inference`,
`.goodput`, `.schedule`) takes exactly the fields its verb (`train`, `serve`, `goodput`,
`schedule`) takes as flags, but the verb's outputs and the scenario's own `cluster`.
Reads `clustertwin cli-docs`, the page generated from the options that parse the flags and from
the field tables that the scenario reader reads. Usage: flag_sets.py CLUSTERTWIN"""
import re
import subprocess
import sys

# train's own outputs and power view, which the other verbs have in their own form or not at all.
TRAIN_ONLY = {"--power", "--power-cap", "--json", "--trace"}


# workload block -> the verb whose flags it takes, and what the verb has that the block does not:
# its outputs and the cluster (the scenario's own).
BLOCKS = {
    "training": ("train", {"--cluster", "--json", "--trace"}),
    "inference": ("serve", {"--cluster", "--json", "--trace", "--format"}),
    "goodput": ("goodput", {"--cluster", "--json"}),
    "schedule": ("schedule", {"--cluster", "--json", "--jobs-csv"}),
}


def block_flags(page, block):
    m = re.search(r"^### `workload\.%s`\n(.*?)(?=^#|\Z)" % block, page, re.S | re.M)
    if not m:
        sys.exit("no scenario keys of workload.%s in cli-docs" % block)
    flags = []
    for line in m.group(1).splitlines():
        cells = re.match(r"^\| `([^`]+)` \| `([^`]+)` \| (.*) \|$", line)
        if cells:
            flags.append(cells.group(2))
    return flags


def options(page, verb):
    m = re.search(r"^## `clustertwin %s`\n(.*?)(?=^## )" % verb, page, re.S | re.M)
    if not m:
        sys.exit("no section for %s in cli-docs" % verb)
    rows = {}
    for line in m.group(1).splitlines():
        cells = re.match(r"^\| `([^`]+)` \| (.*) \| (.*) \| (.*) \|$", line)
        if cells:
            rows[cells.group(1)] = cells.groups()[1:]
    return rows


def main():
    page = subprocess.run([sys.argv[1], "cli-docs"], check=True, capture_output=True,
                          text=True).stdout
    train = {k: v for k, v in options(page, "train").items() if k not in TRAIN_ONLY}
    if len(train) < 40:
        sys.exit("train has only %d training flags: is the table wired?" % len(train))
    bad = []
    for verb in ("power", "goodput", "search"):
        theirs = options(page, verb)
        for flag, row in train.items():
            if flag not in theirs:
                bad.append("%s has no %s" % (verb, flag))
            elif theirs[flag] != row:
                bad.append("%s %s differs from train: %s vs %s" % (verb, flag, theirs[flag], row))
    for block, (verb, outputs) in BLOCKS.items():
        keys = block_flags(page, block)
        if len(keys) != len(set(keys)):
            bad.append("workload.%s names a field twice" % block)
        theirs = set(options(page, verb)) - outputs
        if set(keys) != theirs:
            bad.append("workload.%s and %s differ: keys only %s, flags only %s" % (
                block, verb, sorted(set(keys) - theirs), sorted(theirs - set(keys))))
    if bad:
        sys.exit("\n".join(bad))
    print("train, power, goodput and search take the same %d training flags; the workload "
          "blocks of run take their verbs' flags" % len(train))


main()
