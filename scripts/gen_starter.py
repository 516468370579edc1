#!/usr/bin/env python3
"""Generate every chapter's starter/ track from its reference/ files.

One source of truth (DESIGN.md, tracks): the solution regions live in the reference files,

    // BEGIN EXERCISE 3.2
    // TODO(3.2): what the learner must write (kept, with any comment lines right after it)
    // STARTER: code that replaces the solution in the starter (e.g. a NotImplemented throw)
    ...solution...
    // END EXERCISE

and the starter file is the reference with each region replaced by its TODO comments and its
STARTER lines. Files without regions are copied as they are.

    scripts/gen_starter.py           write chapters/*/starter/
    scripts/gen_starter.py --check   exit 1 when a committed starter file is out of date (CI)
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN = re.compile(r"^(\s*)// BEGIN EXERCISE (\d+\.\d+)\s*$")
END = re.compile(r"^\s*// END EXERCISE\s*$")
STARTER = re.compile(r"^(\s*)// STARTER: ?(.*)$")
SUFFIXES = {".cu", ".cuh", ".cpp", ".hpp", ".h"}


class MarkerError(Exception):
    pass


def header(chapter_dir: Path, name: str, comment: str) -> str:
    rel = f"{chapter_dir.name}/reference/{name}"
    return (f"{comment} Starter track — write your code at the TODO marks; the tests of each exercise\n"
            f"{comment} fail until you do. (Generated from chapters/{rel} by scripts/gen_starter.py.)\n")


def transform(text: str, where: str) -> tuple[str, list[str]]:
    out: list[str] = []
    exercises: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = BEGIN.match(lines[i])
        if not m:
            if END.match(lines[i]):
                raise MarkerError(f"{where}:{i + 1}: END EXERCISE without BEGIN")
            out.append(lines[i])
            i += 1
            continue
        indent, ex = m.group(1), m.group(2)
        exercises.append(ex)
        i += 1
        in_hint = True
        found_todo = False
        while True:
            if i >= len(lines):
                raise MarkerError(f"{where}: BEGIN EXERCISE {ex} without END EXERCISE")
            line = lines[i]
            if END.match(line):
                i += 1
                break
            if BEGIN.match(line):
                raise MarkerError(f"{where}:{i + 1}: nested BEGIN EXERCISE")
            s = STARTER.match(line)
            if s:
                out.append(s.group(1) + s.group(2))
            elif in_hint and line.strip().startswith("//"):
                found_todo = found_todo or f"TODO({ex})" in line
                out.append(line)
            else:
                in_hint = False  # the solution: dropped
            i += 1
        if not found_todo:
            raise MarkerError(f"{where}: exercise {ex} region has no '// TODO({ex}): ...' hint")
    return "\n".join(out) + "\n", exercises


def generate(chapter_dir: Path) -> dict[Path, str]:
    ref = chapter_dir / "reference"
    files: dict[Path, str] = {}
    for src in sorted(ref.iterdir()):
        if src.suffix not in SUFFIXES:
            continue
        body, _ = transform(src.read_text(), str(src.relative_to(ROOT)))
        files[chapter_dir / "starter" / src.name] = header(chapter_dir, src.name, "//") + body
    return files


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="fail if starter/ is out of date")
    args = ap.parse_args()
    stale: list[str] = []
    try:
        for chapter_dir in sorted((ROOT / "chapters").glob("[0-9][0-9]_*")):
            if not (chapter_dir / "reference").is_dir():
                continue
            wanted = generate(chapter_dir)
            starter = chapter_dir / "starter"
            existing = {p for p in starter.glob("*") if p.suffix in SUFFIXES} if starter.is_dir() else set()
            for path, text in wanted.items():
                if not path.exists() or path.read_text() != text:
                    stale.append(str(path.relative_to(ROOT)))
                    if not args.check:
                        path.parent.mkdir(parents=True, exist_ok=True)
                        path.write_text(text)
            for path in sorted(existing - set(wanted)):
                stale.append(f"{path.relative_to(ROOT)} (no reference file)")
                if not args.check:
                    path.unlink()
    except MarkerError as e:
        print(f"gen_starter: {e}", file=sys.stderr)
        return 2
    if args.check:
        if stale:
            print("gen_starter: starter files out of date with the reference (run scripts/gen_starter.py):",
                  *stale, sep="\n  ", file=sys.stderr)
            return 1
        print("gen_starter: every starter file matches its reference")
        return 0
    print(f"gen_starter: {len(stale)} file(s) written" if stale else "gen_starter: up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
