#!/usr/bin/env python3
"""No library error names a CLI flag (issue 18): a scenario-file or Python user must not be told
about flags they never typed. Library messages name fields as {key} (scenario/fields.h) and each
door writes its own word. Scans the string literals of every base::fail(...) and error(...) call
in the given library folders, or with --root in every folder under ROOT (each folder of
src/clustertwin is a library: a new one is covered without naming it here).
Usage: no_flags_in_library.py SRC_DIR... | no_flags_in_library.py --root src/clustertwin"""
import pathlib
import re
import sys

CALL = re.compile(r"\b(?:fail|error)\(")
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def calls(text):
    """The argument text of each fail(...)/error(...) call (balanced parentheses)."""
    for m in CALL.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        yield text.count("\n", 0, m.start()) + 1, text[m.end():i - 1]


def main():
    folders = sys.argv[1:]
    if folders[:1] == ["--root"] and len(folders) == 2:
        folders = sorted(str(p) for p in pathlib.Path(folders[1]).iterdir() if p.is_dir())
        if len(folders) < 10:
            sys.exit("only %d library folders under %s: is it src/clustertwin?" % (
                len(folders), sys.argv[2]))
    bad = []
    files = 0
    for folder in folders:
        for path in sorted(pathlib.Path(folder).glob("*.[ch]*")):
            if path.stem.endswith("_test"):
                continue
            files += 1
            for line, args in calls(path.read_text()):
                for lit in LITERAL.findall(args):
                    for flag in FLAG.findall(lit):
                        bad.append("%s:%d: names the flag %s: %s" % (path, line, flag, lit))
    if files == 0:
        sys.exit("no library sources found in %s" % sys.argv[1:])
    if bad:
        sys.exit("\n".join(bad))
    print("%d files in %d folders: no library message names a flag" % (files, len(folders)))


main()
