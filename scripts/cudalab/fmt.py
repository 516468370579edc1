"""The clang-format check of the tree (what CI and scripts/lab test run)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .core import ROOT


# ---------------------------------------------------------------------------------------------
# Formatting: the tree follows .clang-format (scripts/lab test checks it; CI installs clang-format)

FORMAT_SUFFIXES = {".cu", ".cuh", ".cpp", ".hpp", ".h"}


def format_targets(root: Path = ROOT) -> list[Path]:
    """The C++/CUDA files git tracks, except the generated starter/ (it is the reference with the
    exercise regions cut, checked by scripts/variants.py --check instead)."""
    out = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True)
    if out.returncode != 0:  # a handout or an export without .git: every file under the tree
        files = [p.relative_to(root) for p in root.rglob("*") if p.is_file() and "build" not in p.parts]
    else:
        files = [Path(f) for f in out.stdout.splitlines()]
    return sorted(root / f for f in files if f.suffix in FORMAT_SUFFIXES and "starter" not in f.parts)


def format_problems(root: Path = ROOT, exe: str = "clang-format") -> list[str] | None:
    """Files that clang-format would change (None when clang-format is not installed)."""
    if shutil.which(exe) is None:
        return None
    bad = []
    files = format_targets(root)
    for i in range(0, len(files), 50):
        chunk = files[i:i + 50]
        p = subprocess.run([exe, "--dry-run", "--Werror", *map(str, chunk)], capture_output=True, text=True)
        if p.returncode != 0:
            for f in chunk:
                if str(f) in p.stderr:
                    bad.append(str(f.relative_to(root)))
    return bad
