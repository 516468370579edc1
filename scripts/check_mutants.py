#!/usr/bin/env python3
"""Checks chapters/*/mutants.toml: keys, unique names, and that every `find` occurs exactly once in
the chapter's reference/ files (scripts/variants.py --check does the same once it generates the
mutants). Exit status 1 on any problem; prints the count per chapter.

    python3 scripts/check_mutants.py
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import labtools as lt  # noqa: E402


def main() -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    problems, total = [], 0
    for d in sorted((lt.ROOT / "chapters").glob("[0-9][0-9]_*")):
        ms = lt.load_mutants(d)
        if ms:
            total += len(ms)
            problems += lt.mutant_problems(ms, lt.reference_texts(d), d.name)
            print(f"{d.name}: {len(ms)} mutants ({sum(1 for m in ms if m.get('race'))} race)")
    for p in problems:
        print("PROBLEM: " + p)
    print(f"{total} mutants, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
