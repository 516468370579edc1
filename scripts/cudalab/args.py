"""The command line's checks, each a clear usage error (exit 2) before anything is touched: chapters,
exercises, output folders, CUDALAB_SEED."""
from __future__ import annotations

import os
import re
from pathlib import Path

from .core import ROOT, usage_error
import gradelib  # noqa: E402  (scripts/, on sys.path through cudalab.core)


def chapter_titles() -> dict[str, str]:
    titles = {}
    for d in sorted((ROOT / "chapters").glob("[0-9][0-9]_*")):
        titles["ch" + d.name[:2]] = d.name[3:].replace("_", " ")
    return titles


def writable_dir(path: Path, who: str) -> Path:
    """Creates `path` (a folder) or says why it cannot be one, as a usage error: a file in the way,
    a parent that is a file, no permission."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        usage_error(f"{who}: {path} is a file, not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".cudalab-write-probe"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        usage_error(f"{who}: cannot write into {path}: {e.strerror or e}")
    return path


def check_seed_env() -> None:
    """CUDALAB_SEED, when set, must be a seed the tests accept (0 .. 2^64-1, decimal): said here,
    once, instead of a failure in every test executable."""
    s = os.environ.get("CUDALAB_SEED")
    if s is None or s == "":
        return
    if not re.fullmatch(r"[0-9]+", s) or int(s) >= 2**64:
        usage_error(f"CUDALAB_SEED={s!r}: not a seed (a decimal integer from 0 to {2**64 - 1}); unset it for a random one")


def chapter_choices(root: Path | None = None) -> list[str]:
    """The chapter labels of this tree (ch03, ...), from chapters/NN_slug."""
    return sorted("ch" + d.name[:2] for d in ((root or ROOT) / "chapters").glob("[0-9][0-9]_*") if d.is_dir())


def parse_chapter(s: str) -> str:
    """A chapter argument ('3', '03', 'ch03') as its label, or a usage error listing the chapters."""
    have = chapter_choices()
    try:
        ch = gradelib.norm_chapter(s)
    except ValueError as e:
        usage_error(f"--chapter: {e}; the chapters here: {', '.join(c[2:] for c in have)}")
    if ch not in have:
        usage_error(f"--chapter {s}: no chapter {ch[2:]} in this tree; the chapters here: {', '.join(c[2:] for c in have)}")
    return ch


def known_exercises(root: Path | None = None) -> set[str]:
    """Every exercise with a region in a reference file, or in a starter file's marks (a handout)."""
    import regions
    out: set[str] = set()
    for d in ((root or ROOT) / "chapters").glob("[0-9][0-9]_*"):
        for track in ("reference", "starter"):
            for f in sorted((d / track).glob("*")):
                if f.suffix in regions.SUFFIXES:
                    out.update(m.group(2) for m in map(regions.BEGIN.match, f.read_text(errors="replace").splitlines())
                               if m)
    return out


def parse_exercise(s: str) -> str:
    """An exercise argument ('5.1', '05.1', 'ex:5.1') as N.k, or a usage error: one parser for
    check, hint and grade."""
    try:
        ex = gradelib.norm_exercise(s)
    except ValueError as e:
        usage_error(str(e))
    known = known_exercises()
    if known and ex not in known:
        usage_error(f"{s}: no exercise {ex} in this tree; the exercises: "
                    + " ".join(sorted(known, key=lambda e: [int(x) for x in e.split(".")])))
    return ex
