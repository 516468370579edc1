"""scripts/lab handout OUT: the student copy of this tree.

What goes in: every file git tracks, except the instructor's: chapters/*/reference/ (the
solutions), chapters/*/solutions/ (the notes that explain the reference's design, read after an
attempt), chapters/*/pitfalls/ and chapters/*/mutants.toml (complete solutions with one bug),
the generators and the GPU suite that need them, .ci/, docs/instructors.md. Starter files lose
their pitfall markup (the correct code stays). A marker file .cudalab-handout tells CMake nothing
(a chapter without reference/ builds its starter track alone, without pitfalls) and tells
scripts/lab to treat the starter as the main track. When this tree's build holds the reference
objects, the reference's registers and occupancy go in too (.cudalab-reference-resources.json,
scripts/resources.py), for `scripts/lab check` to show beside the learner's.

Then it checks what it wrote: no reference/ or pitfall file, no exercise or pitfall marker, no
solution (regions.leaks_in against the reference regions of this tree). Standard library only.
"""
from __future__ import annotations

import fnmatch
import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import labtools as lt  # noqa: E402
import regions  # noqa: E402
import resources  # noqa: E402

EXCLUDE = [
    "chapters/*/reference/*", "chapters/*/solutions/*", "chapters/*/pitfalls/*", "chapters/*/mutants.toml",
    "scripts/gen_starter.py", "scripts/variants.py", "scripts/gpu_suite", "scripts/handout.py",
    "scripts/test_*.py", "scripts/report.py", "scripts/results.py", "scripts/new_chapter.py",
    ".ci/*", "docs/instructors.md", "grades/*",
]
MARKERS = ("BEGIN EXERCISE", "END EXERCISE", "BEGIN PITFALL", "END PITFALL", "// BUG:", "// STARTER:")


def excluded(rel: str) -> bool:
    return any(fnmatch.fnmatch(rel, pat) for pat in EXCLUDE)


def tracked_files(root: Path) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True, check=True).stdout
    return [f for f in out.split("\0") if f and (root / f).is_file()]


def is_starter_file(rel: str) -> bool:
    parts = rel.split("/")
    return len(parts) == 4 and parts[0] == "chapters" and parts[2] == "starter" and \
        Path(rel).suffix in regions.SUFFIXES


def write(root: Path, out: Path) -> list[str]:
    """Writes the handout; returns the relative paths written."""
    written = []
    for rel in tracked_files(root):
        if excluded(rel):
            continue
        dst = out / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if is_starter_file(rel):
            dst.write_text(regions.handout_text((root / rel).read_text()))
        else:
            shutil.copy2(root / rel, dst)
        written.append(rel)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
    (out / ".cudalab-handout").write_text(
        f"Student copy of cudalab (commit {head}), written by scripts/lab handout: the starter track only.\n")
    written.append(".cudalab-handout")
    snap = resources.snapshot(root, lt.build_dir(lt.default_preset()))
    if snap:
        (out / resources.SNAPSHOT).write_text(json.dumps(snap, indent=1) + "\n")
        written.append(resources.SNAPSHOT)
    return written


def check(root: Path, out: Path) -> list[str]:
    """What is wrong with a handout in `out` (empty: nothing)."""
    problems = []
    for p in sorted(out.rglob("*")):
        rel = p.relative_to(out).as_posix()
        if p.is_dir():
            if p.name in ("reference", "solutions", "pitfalls") and rel.startswith("chapters/"):
                problems.append(f"{rel}/: instructor folder in the handout")
            continue
        if rel.startswith(".git/"):
            continue
        if excluded(rel):
            problems.append(f"{rel}: instructor file in the handout")
            continue
        if p.suffix in regions.SUFFIXES:
            text = p.read_text(errors="replace")
            for m in MARKERS:
                if m in text and rel.startswith("chapters/"):
                    problems.append(f"{rel}: holds the marker '{m}'")
    for d in sorted((root / "chapters").glob("[0-9][0-9]_*")):
        ref = d / "reference"
        if not ref.is_dir():
            continue
        regs = []
        for src in sorted(ref.iterdir()):
            if src.suffix in regions.SUFFIXES:
                regs += [(str(src.relative_to(root)), r) for r in regions.parse(src.read_text(), str(src))[1]]
        sd = out / "chapters" / d.name / "starter"
        starters = {str(p.relative_to(out)): p.read_text() for p in sorted(sd.glob("*")) if p.suffix in regions.SUFFIXES}
        problems += [f"answer in the handout: {lk}" for lk in regions.leaks_in(regs, starters)]
    return problems


def main(out: Path) -> int:
    root = lt.ROOT
    out = out.resolve()
    if out == root or root in out.parents:
        lt.die(f"{out}: write the handout outside this repository")
    if out.exists() and any(out.iterdir()):
        lt.die(f"{out} exists and is not empty: give a new folder")
    out.mkdir(parents=True, exist_ok=True)
    written = write(root, out)
    problems = check(root, out)
    lt.log(f"handout: {len(written)} files written to {out} (starter track only; build it with "
           f"`cmake --preset ci` or `scripts/lab` there)")
    for p in problems:
        lt.log("PROBLEM: " + p)
    if problems:
        lt.log(f"handout: {len(problems)} problem(s): fix the starter files (or their TODOs) before handing out")
        return 1
    lt.log("handout: checked: no reference/, no pitfall source or marker, no exercise answer in a starter file")
    return 0
