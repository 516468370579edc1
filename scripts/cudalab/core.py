"""What every lab script needs: the repository root, the presets and their build folders, running a
command (logged), the GPU check, the exit statuses and the one way to fail."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository (scripts/cudalab/core.py)
sys.path.insert(0, str(ROOT / "scripts"))
import gradelib  # noqa: E402,F401  (what a test's labels say: one reading for grading and running)


# ctest label of the tests of a pitfall whose region is marked RACE (`// BEGIN PITFALL name
# EXERCISES N.k RACE`, scripts/variants.py): its bug is a shared-memory race, which
# compute-sanitizer racecheck finds on every run.
RACE_LABEL = "race"


# compute-sanitizer --error-exitcode: the exit status when the tool reports an error or hazard.
SANITIZER_ERROR_EXITCODE = 99


def log(msg: str) -> None:
    print(msg, flush=True)


def gpu_visible() -> tuple[bool, str]:
    """A GPU is usable when nvidia-smi lists one (the CUDA runtime would agree)."""
    if shutil.which("nvidia-smi") is None:
        return False, "no nvidia-smi on PATH (no NVIDIA driver)"
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"nvidia-smi failed: {e}"
    gpus = [line for line in out.stdout.splitlines() if line.startswith("GPU ")]
    if out.returncode != 0 or not gpus:
        return False, "nvidia-smi lists no GPU"
    return True, gpus[0]


def default_preset() -> str:
    return "gpu" if gpu_visible()[0] else "ci"


def build_dir(preset: str) -> Path:
    return ROOT / "build" / preset


def run(cmd: list[str], log_file: Path | None = None, check: bool = True, quiet: bool = False,
        env: dict | None = None, timeout: float | None = None) -> subprocess.CompletedProcess:
    """Runs a command from the repository root; output to the terminal and/or a log file."""
    if not quiet:
        log("$ " + " ".join(cmd))
    full_env = dict(os.environ, **(env or {}))
    if log_file is None and not quiet:
        proc = subprocess.run(cmd, cwd=ROOT, env=full_env, timeout=timeout, text=True)
    else:
        proc = subprocess.run(cmd, cwd=ROOT, env=full_env, timeout=timeout, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if log_file is not None:
            log_file.parent.mkdir(parents=True, exist_ok=True)
            with open(log_file, "a") as f:
                f.write("$ " + " ".join(cmd) + "\n" + (proc.stdout or ""))
    if check and proc.returncode != 0:
        tail = "\n".join((proc.stdout or "").splitlines()[-40:]) if proc.stdout else ""
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{tail}")
    return proc


def cache_value(bdir: Path, name: str) -> str | None:
    """The value CMakeCache.txt in bdir holds for the cache entry `name` (None: no cache, or no
    such entry), so that a tool that changes a build option can put back what it found."""
    cache = bdir / "CMakeCache.txt"
    if not cache.is_file():
        return None
    for line in cache.read_text(errors="replace").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.split(":", 1)[0] == name:
            return value
    return None


# Exit statuses of every lab script (docs/student-guide.md lists them): 0 all is well, 1 something
# failed (a test, an exercise, a build), 2 the command line is wrong (nothing was done), 3 nothing
# could be judged here (every test of what was asked needs what this machine lacks, e.g. a GPU).
EXIT_FAILED, EXIT_USAGE, EXIT_NOT_GRADED = 1, 2, 3


def die(msg: str, code: int = EXIT_FAILED) -> None:
    print(msg, file=sys.stderr)
    raise SystemExit(code)


def usage_error(msg: str) -> None:
    """A wrong argument: says which and why, exits 2, before anything was touched."""
    die(msg, EXIT_USAGE)
