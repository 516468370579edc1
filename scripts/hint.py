#!/usr/bin/env python3
"""Progressive hints for one exercise, shown on demand.

    scripts/hint.py 6.2            level 1 (the idea)
    scripts/hint.py 6.2 2          levels 1 and 2 (idea, structure)
    scripts/hint.py 6.2 3          levels 1 to 3 (idea, structure, near-code)
    scripts/hint.py 6.2 stretch    the stretch goal only (for when your solution passes)
    scripts/hint.py 6.2 solution   the reference's design, where the chapter has solution notes
                                   (chapters/NN_slug/solutions/N.k.md; the handout leaves them out)
    scripts/hint.py --list         every exercise that has hints

`scripts/lab hint 6.2 [level]` runs this. The hints of exercise N.k live in
chapters/NN_slug/hints/N.k.md, with the sections `## Level 1 — idea`, `## Level 2 — structure`,
`## Level 3 — near-code` and `## Stretch` (docs/instructors.md, "Setting an exercise's
difficulty"). Every exercise region of a reference file (`// BEGIN EXERCISE N.k`) has one; the
unit tests (scripts/test_hint.py) check it.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
SECTIONS = ("Level 1 — idea", "Level 2 — structure", "Level 3 — near-code", "Stretch")
LEVELS = {"1": 1, "2": 2, "3": 3, "stretch": 4, "solution": 5}
EXERCISE = re.compile(r"^\d+\.\d+$")
BEGIN = re.compile(r"^\s*// BEGIN EXERCISE (\d+\.\d+)\s*$", re.MULTILINE)
SOURCE_SUFFIXES = {".cu", ".cuh", ".cpp", ".hpp", ".h"}


class HintError(Exception):
    """A request this script cannot answer; the message says why and what would work."""


def exercise_key(ex: str) -> tuple[int, int]:
    major, minor = ex.split(".")
    return int(major), int(minor)


def chapter_dirs(root: Path = ROOT) -> list[Path]:
    return sorted(p for p in (root / "chapters").glob("[0-9][0-9]_*") if p.is_dir())


def exercises_in_reference(root: Path = ROOT) -> dict[str, Path]:
    """Every exercise that has a region in a reference file -> its chapter directory."""
    found: dict[str, Path] = {}
    for chapter in chapter_dirs(root):
        ref = chapter / "reference"
        if not ref.is_dir():
            continue
        for src in sorted(ref.rglob("*")):
            if src.suffix in SOURCE_SUFFIXES and src.is_file():
                for ex in BEGIN.findall(src.read_text(errors="replace")):
                    found.setdefault(ex, chapter)
    return found


def hint_files(root: Path = ROOT) -> dict[str, Path]:
    """Every hints file, by exercise id."""
    files: dict[str, Path] = {}
    for chapter in chapter_dirs(root):
        for md in sorted((chapter / "hints").glob("*.md")):
            if EXERCISE.match(md.stem):
                files[md.stem] = md
    return files


def parse_sections(text: str) -> dict[str, str]:
    """The `## ` sections of a hints file: title -> body (stripped)."""
    sections: dict[str, str] = {}
    title = None
    body: list[str] = []
    for line in text.splitlines():
        if line.startswith("## "):
            if title is not None:
                sections[title] = "\n".join(body).strip()
            title, body = line[3:].strip(), []
        elif title is not None:
            body.append(line)
    if title is not None:
        sections[title] = "\n".join(body).strip()
    return sections


def missing_sections(text: str) -> list[str]:
    sections = parse_sections(text)
    return [s for s in SECTIONS if not sections.get(s)]


def render(exercise: str, level: str = "1", root: Path = ROOT) -> str:
    """The text `hint.py exercise level` prints; HintError for an unknown exercise or level.
    The id is read as `scripts/lab check` reads it (gradelib.norm_exercise: 05.1 is 5.1)."""
    import gradelib  # the one exercise-id parser of the lab scripts
    try:
        exercise = gradelib.norm_exercise(exercise)
    except ValueError as e:
        raise HintError(str(e)) from None
    if level not in LEVELS:
        raise HintError(f"unknown level '{level}': use 1 (idea), 2 (structure), 3 (near-code), "
                        "stretch or solution")
    files = hint_files(root)
    if exercise not in files:
        known = " ".join(sorted(files, key=exercise_key)) or "none"
        raise HintError(f"no hints for exercise {exercise}: exercises with hints are {known}")
    if LEVELS[level] == 5:
        notes = files[exercise].parent.parent / "solutions" / f"{exercise}.md"
        if notes.exists():
            return notes.read_text().rstrip() + "\n"
        return (f"No solution notes for {exercise} in this copy ({notes.relative_to(root)} does not exist: "
                f"not every exercise has them, and a handout leaves them out). The reference's ratio: "
                f"scripts/lab check {exercise}; the stretch: scripts/lab hint {exercise} stretch.\n")
    text = files[exercise].read_text()
    sections = parse_sections(text)
    missing = missing_sections(text)
    if missing:
        raise HintError(f"{files[exercise].relative_to(root)} lacks the section(s) "
                        + ", ".join(f"'## {m}'" for m in missing))
    first = text.splitlines()[0] if text.startswith("# ") else f"# Exercise {exercise}"
    wanted = [SECTIONS[3]] if LEVELS[level] == 4 else list(SECTIONS[:LEVELS[level]])
    out = [first, ""]
    for title in wanted:
        out += [f"## {title}", "", sections[title], ""]
    if LEVELS[level] < 3:
        out.append(f"(more: scripts/lab hint {exercise} {LEVELS[level] + 1})")
    elif LEVELS[level] == 3:
        out.append(f"(when it passes: scripts/lab hint {exercise} stretch; the reference's design: "
                   f"scripts/lab hint {exercise} solution)")
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("exercise", nargs="?", help="exercise id, e.g. 6.2")
    ap.add_argument("level", nargs="?", default="1", help="1, 2, 3, stretch or solution (default 1)")
    ap.add_argument("--list", action="store_true", help="list the exercises that have hints")
    args = ap.parse_args(argv)
    if args.list:
        print(" ".join(sorted(hint_files(), key=exercise_key)))
        return 0
    if args.exercise is None:
        ap.print_usage(sys.stderr)
        print("hint: name an exercise, e.g. scripts/lab hint 6.2 (or --list)", file=sys.stderr)
        return 2
    try:
        sys.stdout.write(render(args.exercise, args.level.lower()))
    except HintError as e:
        print(f"hint: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
