#!/usr/bin/env python3
"""Every variant of a chapter's sources, generated from its reference files (one source of truth).

Three kinds of variant, all read from chapters/NN_slug/reference/ (docs/architecture.md, "Tracks"):

starter (committed under chapters/NN_slug/starter/, checked by --check):

    // BEGIN EXERCISE 3.2
    // TODO(3.2): what the learner must write (kept, with any comment lines right after it)
    // STARTER: code that replaces the solution in the starter (e.g. a NotImplemented throw)
    ...solution...
    // END EXERCISE

  The starter file is the reference with each region replaced by its TODO comments and its
  STARTER lines. Pitfall markers are dropped from the starter (their correct code and lesson stay).

pitfall (generated into the build directory at configure time, never committed):

    // BEGIN PITFALL missing_bounds_check EXERCISES 3.2 [3.3 ...] [RACE]
    // the lesson: symptom, why, what catches it, the fix (comment lines)
    ...correct code (kept in the reference and the starter)...
    // BUG: code that replaces the correct code in the pitfall variant (one line each)
    // END PITFALL

  A pitfall may have several regions (same name and header) in the chapter's files; a region may
  sit inside an exercise region. RACE: the bug is a shared-memory race (ctest label "race").

mutant (chapters/NN_slug/mutants.toml; generated like pitfalls, built with -DCUDALAB_MUTANTS=ON):

    [[mutant]]
    name = "reduce_tail_le"   # unique in the chapter
    exercise = "5.1"          # whose tests must kill it
    find = "if (i < n)"       # exact text, exactly once in the chapter's reference files
    replace = "if (i <= n)"
    race = false              # true: a removed barrier (ctest label "race")
    why = "bound < to <="

Commands:
    scripts/variants.py                      write chapters/*/starter/
    scripts/variants.py --check              CI: starters up to date, markers well formed, every
                                             pitfall has a lesson and a BUG line, every mutant's
                                             find text occurs exactly once
    scripts/variants.py --configure CHAPTER_DIR OUT_DIR
                                             (CMake, at configure time) write each pitfall and
                                             mutant's sources under OUT_DIR/<kind>_<name>/ and
                                             OUT_DIR/variants.cmake, which declares them with
                                             lab_variant(...)
    scripts/variants.py --list               the pitfalls and mutants of every chapter
"""
from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
import labtools as lt  # noqa: E402  (the mutant schema, shared with the GPU suite)
import regions  # noqa: E402  (the exercise-region parser, shared with scripts/grade)

BEGIN, END = regions.BEGIN, regions.END
PIT_BEGIN, PIT_HEAD = regions.PITFALL_BEGIN_PARSE, regions.PITFALL_HEAD_PARSE
PIT_BUG, PIT_END = regions.PITFALL_BUG_PARSE, regions.PITFALL_END_PARSE
NAME = re.compile(r"^[a-z][a-z0-9_]*$")
SUFFIXES = regions.SUFFIXES
COMPILED = {".cu", ".cpp"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


class MarkerError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Pitfall regions


@dataclasses.dataclass
class PitfallRegion:
    name: str
    exercises: tuple[str, ...]
    race: bool
    file: str        # file name inside reference/
    begin: int       # 0-based line index of BEGIN PITFALL
    code_end: int    # index of the first BUG line
    end: int         # index of END PITFALL
    lesson: list[str]
    bugs: list[str]  # the replacement lines, indented like their BUG marker


def parse_pitfalls(text: str, file: str, where: str) -> list[PitfallRegion]:
    """The pitfall regions of one file; raises MarkerError when a marker is malformed."""
    lines = text.splitlines()
    regions: list[PitfallRegion] = []
    i = 0
    while i < len(lines):
        m = PIT_BEGIN.match(lines[i])
        if not m:
            if PIT_END.match(lines[i]) or PIT_BUG.match(lines[i]):
                raise MarkerError(f"{where}:{i + 1}: '{lines[i].strip()}' outside a PITFALL region")
            i += 1
            continue
        name, rest = m.group(1), m.group(2)
        h = PIT_HEAD.match(rest)
        if not NAME.match(name) or not h:
            raise MarkerError(f"{where}:{i + 1}: want '// BEGIN PITFALL <snake_name> EXERCISES N.k [N.k ...] [RACE]'")
        begin = i
        i += 1
        lesson: list[str] = []
        while i < len(lines) and lines[i].strip().startswith("//") and not (
                PIT_BUG.match(lines[i]) or PIT_END.match(lines[i]) or PIT_BEGIN.match(lines[i])):
            lesson.append(lines[i])
            i += 1
        if not any(l.strip("/ \t") for l in lesson):
            raise MarkerError(f"{where}:{begin + 1}: pitfall {name} has no lesson (comment lines after BEGIN)")
        code_end = None
        bugs: list[str] = []
        while True:
            if i >= len(lines):
                raise MarkerError(f"{where}:{begin + 1}: BEGIN PITFALL {name} without END PITFALL")
            line = lines[i]
            if PIT_BEGIN.match(line) or BEGIN.match(line) or END.match(line):
                raise MarkerError(f"{where}:{i + 1}: a PITFALL region must not contain other regions' markers")
            b = PIT_BUG.match(line)
            if b:
                code_end = i if code_end is None else code_end
                bugs.append(b.group(1) + b.group(2) if b.group(2) else "")
            elif PIT_END.match(line):
                break
            elif code_end is not None:
                raise MarkerError(f"{where}:{i + 1}: pitfall {name}: code after a BUG line (BUG lines go last)")
            i += 1
        if not bugs:
            raise MarkerError(f"{where}:{begin + 1}: pitfall {name} has no '// BUG: ...' line")
        regions.append(PitfallRegion(name, tuple(h.group(1).split()), bool(h.group(2)), file, begin,
                                     code_end, i, lesson, bugs))
        i += 1
    return regions


def is_pitfall_marker(line: str) -> bool:
    return bool(PIT_BEGIN.match(line) or PIT_BUG.match(line) or PIT_END.match(line))


# ---------------------------------------------------------------------------------------------
# Starter


def header(chapter_dir: Path, name: str, comment: str) -> str:
    rel = f"{chapter_dir.name}/reference/{name}"
    return (f"{comment} Starter track — write your code at the TODO marks; the tests of each exercise\n"
            f"{comment} fail until you do. (Generated from chapters/{rel} by scripts/variants.py.)\n")


def transform(text: str, where: str) -> tuple[str, list[str]]:
    """The starter text of one reference file, and the exercises it holds. The exercise regions are
    cut by scripts/regions.py (the parser scripts/grade --submission splices with), so the starter
    and the splicer cannot disagree; a pitfall region inside a solution goes with the solution."""
    parse_pitfalls(text, "", where)  # well-formed pitfall markers, or MarkerError
    try:
        segments, found = regions.parse(text, where)
    except regions.RegionError as e:
        raise MarkerError(str(e)) from e
    out: list[str] = []
    for seg in segments:
        if isinstance(seg, regions.Region):
            if not any(f"TODO({seg.exercise})" in line for line in seg.hint):
                raise MarkerError(f"{where}: exercise {seg.exercise} region has no '// TODO({seg.exercise}): ...' hint")
            out += seg.form
        else:
            out += [line for line in seg if not is_pitfall_marker(line)]
    return "\n".join(out) + "\n", [r.exercise for r in found]


def reference_files(chapter_dir: Path) -> list[Path]:
    ref = chapter_dir / "reference"
    return sorted(p for p in ref.iterdir() if p.suffix in SUFFIXES) if ref.is_dir() else []


def generate(chapter_dir: Path) -> dict[Path, str]:
    files: dict[Path, str] = {}
    for src in reference_files(chapter_dir):
        body, _ = transform(src.read_text(), str(src.relative_to(ROOT)) if src.is_relative_to(ROOT) else str(src))
        files[chapter_dir / "starter" / src.name] = header(chapter_dir, src.name, "//") + body
    return files


# ---------------------------------------------------------------------------------------------
# Pitfalls and mutants of a chapter


@dataclasses.dataclass
class Variant:
    kind: str                    # "pitfall" or "mutant"
    name: str
    exercises: tuple[str, ...]
    race: bool
    files: dict[str, str]        # reference file name -> its changed text
    why: str = ""


def chapter_id(chapter_dir: Path) -> str:
    return "ch" + chapter_dir.name.split("_", 1)[0]


def pitfalls(chapter_dir: Path) -> list[Variant]:
    texts = {p.name: p.read_text() for p in reference_files(chapter_dir)}
    by_name: dict[str, list[PitfallRegion]] = {}
    for name, text in texts.items():
        for r in parse_pitfalls(text, name, f"{chapter_dir.name}/reference/{name}"):
            by_name.setdefault(r.name, []).append(r)
    out: list[Variant] = []
    for name, regions in sorted(by_name.items()):
        first = regions[0]
        for r in regions[1:]:
            if (r.exercises, r.race) != (first.exercises, first.race):
                raise MarkerError(f"{chapter_dir.name}: pitfall {name}: its regions disagree on EXERCISES/RACE")
        files: dict[str, str] = {}
        for fname in sorted({r.file for r in regions}):
            lines = texts[fname].splitlines()
            # Replace from the last region up, so that earlier indices stay valid.
            for r in sorted((r for r in regions if r.file == fname), key=lambda r: r.begin, reverse=True):
                lines[r.begin:r.end + 1] = r.lesson + r.bugs
            files[fname] = "\n".join(lines) + "\n"
        out.append(Variant("pitfall", name, first.exercises, first.race, files))
    return out


def mutants(chapter_dir: Path) -> list[Variant]:
    """The chapter's mutants, checked by labtools.mutant_problems: the one schema that CI (through
    this generator) and the GPU suite both apply, so a mutant CI accepts is one the suite runs."""
    path = chapter_dir / "mutants.toml"
    if not path.exists():
        return []
    where = f"{chapter_dir.name}/mutants.toml"
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise MarkerError(f"{where}: {e}") from e
    ms = list(data.get("mutant", []))
    problems = lt.mutant_problems(ms, lt.reference_texts(chapter_dir), where)
    if problems:
        raise MarkerError("; ".join(problems))
    texts = {p.name: p.read_text() for p in reference_files(chapter_dir)}
    out: list[Variant] = []
    for m in ms:
        fname = next((f for f, t in texts.items() if m["find"] in t), None)
        if fname is None:  # the one occurrence is in a file the build does not compile from
            raise MarkerError(f"{where}: mutant {m['name']}: 'find' is not in a source file of reference/ "
                              f"({', '.join(sorted(SUFFIXES))})")
        out.append(Variant("mutant", m["name"], (m["exercise"],), bool(m.get("race", False)),
                           {fname: texts[fname].replace(m["find"], m["replace"])}, m.get("why", "")))
    return out


def includers(chapter_dir: Path, changed: set[str]) -> list[str]:
    """The compiled reference files (.cu/.cpp) that are or include (transitively) a changed file."""
    files = {p.name: p for p in reference_files(chapter_dir)}
    deps = {n: set(INCLUDE.findall(p.read_text())) & set(files) for n, p in files.items()}
    hit = set(changed)
    grew = True
    while grew:
        grew = False
        for n, d in deps.items():
            if n not in hit and d & hit:
                hit.add(n)
                grew = True
    return sorted(n for n in hit if Path(n).suffix in COMPILED)


def variant_sources(chapter_dir: Path, v: Variant) -> tuple[dict[str, str], list[str]]:
    """All files of v's folder, and the compiled ones among them. A changed header brings every
    file that includes it, and the chapter's other headers, so that `#include "x.cuh"` resolves
    inside the folder."""
    compiled = includers(chapter_dir, set(v.files))
    out = dict(v.files)
    headers_changed = any(Path(f).suffix not in COMPILED for f in v.files)
    for p in reference_files(chapter_dir):
        if p.name in out:
            continue
        if p.name in compiled or (headers_changed and p.suffix not in COMPILED):
            out[p.name] = p.read_text()
    return out, compiled


def write_if_changed(path: Path, text: str) -> bool:
    if path.exists() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return True


def cmake_quote(s: str) -> str:
    return "[==[" + s + "]==]"


def configure(chapter_dir: Path, out_dir: Path) -> int:
    """Write every pitfall's and mutant's sources under out_dir and the manifest that declares them."""
    ch = chapter_id(chapter_dir)
    rel = chapter_dir.relative_to(ROOT) if chapter_dir.is_relative_to(ROOT) else chapter_dir
    lines = [f"# Generated by scripts/variants.py from {rel}/reference and mutants.toml at configure",
             "# time: the pitfall and mutant variants of the chapter. Do not edit; do not commit.", ""]
    keep: set[Path] = {out_dir / "variants.cmake"}
    for v in pitfalls(chapter_dir) + mutants(chapter_dir):
        vdir = out_dir / f"{v.kind}_{v.name}"
        files, compiled = variant_sources(chapter_dir, v)
        for fname, text in files.items():
            changed = fname in v.files
            what = f"{v.kind} {v.name} of" if changed else f"unchanged copy (for {v.kind} {v.name}) of"
            write_if_changed(vdir / fname, f"// Generated by scripts/variants.py: {what} {rel}/reference/{fname}. "
                             "Do not edit.\n" + text)
            keep.add(vdir / fname)
        args = [ch, v.kind, v.name, "EXERCISES", *v.exercises]
        if v.race:
            args.append("RACE")
        args += ["DIR", cmake_quote(str(vdir)), "SOURCES", *compiled]
        lines.append(f"lab_variant({' '.join(args)})")
    write_if_changed(out_dir / "variants.cmake", "\n".join(lines) + "\n")
    if out_dir.is_dir():  # variants renamed or removed since the last configure
        for p in sorted(out_dir.rglob("*"), reverse=True):
            if p.is_file() and p not in keep:
                p.unlink()
            elif p.is_dir() and not any(p.iterdir()):
                p.rmdir()
    return 0


# ---------------------------------------------------------------------------------------------


def chapters() -> list[Path]:
    return [d for d in sorted((ROOT / "chapters").glob("[0-9][0-9]_*")) if (d / "reference").is_dir()]


def check_exercises(chapter_dir: Path, v: Variant) -> list[str]:
    """The exercise ids a variant names that no exercise region of the chapter declares."""
    known: set[str] = set()
    for p in reference_files(chapter_dir):
        known.update(m.group(2) for m in map(BEGIN.match, p.read_text().splitlines()) if m)
    return [ex for ex in v.exercises if ex not in known]


def edited_by_hand(path: Path) -> bool:
    """A starter file the generator would overwrite though its chapter's reference files are the
    committed ones: the difference is someone's edit of the starter (a learner working in a clone),
    not a reference edit being regenerated. Without git nothing can be told: not edited."""
    import subprocess
    if not path.exists():
        return False
    chapter = path.parent.parent.relative_to(ROOT).as_posix()
    ref = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", f"{chapter}/reference", f"{chapter}/mutants.toml"],
                         cwd=ROOT, capture_output=True)
    if ref.returncode != 0:
        return False  # the reference is being edited (or no git): regenerating is the point
    head = subprocess.run(["git", "show", f"HEAD:./{path.relative_to(ROOT).as_posix()}"], cwd=ROOT,
                          capture_output=True, text=True)
    return head.returncode == 0 and head.stdout != path.read_text()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--check", action="store_true", help="CI: fail if starter/ is out of date or a marker is wrong")
    g.add_argument("--configure", nargs=2, metavar=("CHAPTER_DIR", "OUT_DIR"), help="(CMake) write the variants")
    g.add_argument("--list", action="store_true", help="list every chapter's pitfalls and mutants")
    ap.add_argument("--force", action="store_true",
                    help="write starter files that were edited by hand too (their edits are lost)")
    args = ap.parse_args()
    try:
        if args.configure:
            return configure(Path(args.configure[0]).resolve(), Path(args.configure[1]).resolve())
        if args.list:
            for d in chapters():
                for v in pitfalls(d) + mutants(d):
                    print(f"{chapter_id(d)} {v.kind:7} {v.name:32} ex {' '.join(v.exercises)}"
                          f"{' race' if v.race else ''}  {', '.join(v.files)}")
            return 0
        stale: list[str] = []
        problems: list[str] = []
        writes: list[tuple[Path, str | None]] = []  # (path, text), None: delete
        for chapter_dir in chapters():
            wanted = generate(chapter_dir)
            for v in pitfalls(chapter_dir) + mutants(chapter_dir):
                for ex in check_exercises(chapter_dir, v):
                    problems.append(f"{chapter_dir.name}: {v.kind} {v.name} names exercise {ex}, "
                                    "which no BEGIN EXERCISE region declares")
            starter = chapter_dir / "starter"
            existing = {p for p in starter.glob("*") if p.suffix in SUFFIXES} if starter.is_dir() else set()
            for path, text in wanted.items():
                if not path.exists() or path.read_text() != text:
                    stale.append(str(path.relative_to(ROOT)))
                    writes.append((path, text))
            for path in sorted(existing - set(wanted)):
                stale.append(f"{path.relative_to(ROOT)} (no reference file)")
                writes.append((path, None))
        if not args.check and writes:
            edited = [p for p, _ in writes if edited_by_hand(p)]
            if edited and not args.force:
                print("variants: these starter files were edited by hand (they differ from the committed "
                      "version): a learner's work? Nothing was written. Commit or move them, or rerun with "
                      "--force to overwrite them:", *(str(p.relative_to(ROOT)) for p in edited), sep="\n  ",
                      file=sys.stderr)
                return 1
            for path, text in writes:
                if text is None:
                    path.unlink()
                else:
                    write_if_changed(path, text)
    except MarkerError as e:
        print(f"variants: {e}", file=sys.stderr)
        return 2
    if problems:
        print("variants:", *problems, sep="\n  ", file=sys.stderr)
        return 2
    if args.check:
        if stale:
            print("variants: starter files out of date with the reference (run scripts/variants.py):",
                  *stale, sep="\n  ", file=sys.stderr)
            return 1
        print("variants: every starter file matches its reference; pitfall and mutant markers are well formed")
        return 0
    print(f"variants: {len(stale)} starter file(s) written" if stale else "variants: starters up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
