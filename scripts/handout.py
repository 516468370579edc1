"""scripts/lab handout OUT: the student copy of this tree.

What goes in: every file git tracks, except the instructor's: chapters/*/reference/ (the
solutions), chapters/*/solutions/ (the notes that explain the reference's design, read after an
attempt), chapters/*/pitfalls/ and chapters/*/mutants.toml (complete solutions with one bug),
the generators and the GPU suite that need them, .ci/ and docs/instructors.md. Starter files lose
their pitfall markup (the correct code stays) and show their exercise regions (BEGIN/END EXERCISE)
and a HELPERS region (regions.handout_text); a pristine copy of each goes to .cudalab/pristine/
(scripts/grade compiles it in place of a file of the student's that does not compile, so that the
other exercises are still graded). Markdown files lose their `<!-- full-tree begin -->` ...
`<!-- full-tree end -->` blocks and show their `<!-- handout-only ... -->` blocks: one README, two
readers. A marker file .cudalab-handout tells scripts/lab to treat the starter as the main track
(CMake needs no marker: a chapter without reference/ builds its starter track alone, without
pitfalls). When this tree's build holds the reference objects, the reference's registers and
occupancy go in too (.cudalab-reference-resources.json, scripts/resources.py), for
`scripts/lab check` to show beside the learner's.

Then it checks what it wrote: no reference/ or pitfall file, no pitfall marker, every exercise
region marked, no solution (regions.leaks_in against the reference regions of this tree), and every
link of its Markdown files resolves inside it. Standard library only.
"""
from __future__ import annotations

import fnmatch
import json
import re
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
    "scripts/gen_starter.py", "scripts/variants.py", "scripts/gpu_suite", "scripts/cudalab/gpu_suite.py",
    "scripts/gpu_acceptance",
    "scripts/handout.py",
    "scripts/test_*.py", "scripts/results.py", "scripts/new_chapter.py",
    "scripts/gpu_blindspots.sh", "scripts/gpu_exercises.sh", "scripts/handout_check", "tests/fixtures/*",
    ".ci/*", "docs/instructors.md", "grades/*",
]
# Markers that must not reach the student: the exercise and HELPERS marks are shown on purpose.
MARKERS = ("BEGIN PITFALL", "END PITFALL", "// BUG:", "// STARTER:")
PRISTINE = ".cudalab/pristine"
FULL_BLOCK = re.compile(r"^[ \t]*<!-- full-tree begin -->[ \t]*\n.*?^[ \t]*<!-- full-tree end -->[ \t]*\n", re.M | re.S)
HANDOUT_BLOCK = re.compile(r"^[ \t]*<!-- handout-only[ \t]*\n(.*?)^[ \t]*-->[ \t]*\n", re.M | re.S)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def excluded(rel: str) -> bool:
    return any(fnmatch.fnmatch(rel, pat) for pat in EXCLUDE)


def tracked_files(root: Path) -> list[str]:
    # tracked files and the untracked ones git does not ignore: a tree with new, not yet committed
    # files (a merge being checked) hands them out too, as its build and tests use them
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                         capture_output=True, text=True, check=True).stdout
    return [f for f in out.split("\0") if f and (root / f).is_file()]


def is_starter_file(rel: str) -> bool:
    parts = rel.split("/")
    return len(parts) == 4 and parts[0] == "chapters" and parts[2] == "starter" and \
        Path(rel).suffix in regions.SUFFIXES


def handout_markdown(text: str) -> str:
    """A Markdown file as the handout has it: full-tree blocks out, handout-only blocks shown."""
    return HANDOUT_BLOCK.sub(lambda m: m.group(1), FULL_BLOCK.sub("", text))


def full_markdown(text: str) -> str:
    """The same file as the full tree's reader sees it (what a renderer shows; for the tests)."""
    return HANDOUT_BLOCK.sub("", text)


def starter_text(root: Path, rel: str) -> str:
    """A starter file as the handout has it (regions marked, pitfall markup out)."""
    ref = root / rel.replace("/starter/", "/reference/", 1)
    return regions.handout_text((root / rel).read_text(), ref.read_text() if ref.exists() else None, rel)


def write(root: Path, out: Path) -> list[str]:
    """Writes the handout; returns the relative paths written."""
    written = []
    for rel in tracked_files(root):
        if excluded(rel):
            continue
        dst = out / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if is_starter_file(rel):
            text = starter_text(root, rel)
            dst.write_text(text)
            pristine = out / PRISTINE / rel
            pristine.parent.mkdir(parents=True, exist_ok=True)
            pristine.write_text(text)
        elif rel.endswith(".md"):
            dst.write_text(handout_markdown((root / rel).read_text()))
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
        if rel.startswith(".git/") or rel.startswith(PRISTINE + "/"):
            continue
        if excluded(rel):
            problems.append(f"{rel}: instructor file in the handout")
            continue
        if p.suffix in regions.SUFFIXES:
            text = p.read_text(errors="replace")
            for m in MARKERS:
                if m in text and rel.startswith("chapters/"):
                    problems.append(f"{rel}: holds the marker '{m}'")
            if is_starter_file(rel):
                try:
                    regions.parse(text, rel)
                except regions.RegionError as e:
                    problems.append(f"{rel}: its exercise marks do not parse: {e}")
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
        marked = {r.exercise for text in starters.values() for r in regions.parse(text)[1]}
        for ex in sorted({r.exercise for _, r in regs} - marked, key=lambda e: [int(x) for x in e.split(".")]):
            problems.append(f"exercise {ex}: no starter file of {d.name} marks its region")
    problems += broken_links(out, root)
    return problems


def broken_links(out: Path, root: Path | None = None) -> list[str]:
    """Every relative Markdown link of the handout's README.md, docs/ and chapter READMEs that does
    not resolve inside it (a student following it would find nothing). With `root` (the tree the
    handout came from), a link that is broken there too is left out: that is the tree's bug, which
    its own check reports (broken_links(root))."""
    bad = []
    files = [out / "README.md", *sorted((out / "docs").rglob("*.md")), *sorted((out / "chapters").glob("*/README.md"))]
    for md in files:
        if not md.is_file():
            continue
        for n, line in enumerate(md.read_text(errors="replace").splitlines(), 1):
            for target in LINK.findall(line):
                if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                    continue  # a URL or an anchor of the same page
                path = target.split("#", 1)[0]
                dest = (md.parent / path).resolve()
                if out.resolve() not in (dest, *dest.parents) or not dest.exists():
                    if root is not None:
                        twin = (root / md.relative_to(out)).parent / path
                        if not twin.exists():
                            continue
                    bad.append(f"{md.relative_to(out)}:{n}: link to {target}: not in the handout")
    return bad


def main(out: Path) -> int:
    root = lt.ROOT
    out = out.resolve()
    if out == root or root in out.parents:
        lt.usage_error(f"lab handout {out}: write the handout outside this repository")
    if out.exists() and not out.is_dir():
        lt.usage_error(f"lab handout {out}: a file is there, not a folder: give a new folder")
    if out.exists() and any(out.iterdir()):
        lt.usage_error(f"lab handout {out}: the folder exists and is not empty: give a new folder")
    lt.writable_dir(out, "lab handout")
    written = write(root, out)
    problems = check(root, out)
    lt.log(f"handout: {len(written)} files written to {out} (starter track only; build it with "
           f"`cmake --preset ci` or `scripts/lab` there)")
    for p in problems:
        lt.log("PROBLEM: " + p)
    if problems:
        lt.log(f"handout: {len(problems)} problem(s): fix the starter files (or their TODOs) before handing out")
        return 1
    lt.log("handout: checked: no reference/, no pitfall source or marker, every exercise region marked, no "
           "exercise answer in a starter file, every Markdown link resolves inside it")
    return 0
