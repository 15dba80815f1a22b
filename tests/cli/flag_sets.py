#!/usr/bin/env python3
"""Every verb that runs a training job takes the same training flags (issue 18): the options of
`train` from the training field table (scenario/training.cpp) are options of `power`, `goodput`
and `search` too, with the same help, accepted values and default; `run FILE` reads the same
fields as keys (the scenario layer's unit test TrainingFields.EveryFieldIsReadFromAScenarioBlock).
Reads `clustertwin cli-docs`, the page generated from the options that parse the flags.
Usage: flag_sets.py CLUSTERTWIN"""
import re
import subprocess
import sys

# train's own outputs and power view, which the other verbs have in their own form or not at all.
TRAIN_ONLY = {"--power", "--power-cap", "--json", "--trace"}


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
    if bad:
        sys.exit("\n".join(bad))
    print("train, power, goodput and search take the same %d training flags" % len(train))


main()
