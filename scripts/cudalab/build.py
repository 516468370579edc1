"""Configuring and building (a live log, ninja's progress, the compiler's errors first), and the
fallback when a learner's file does not compile: the pristine starter in a scratch copy of the
tree, never in the learner's."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .core import ROOT, build_dir, die, log


class BuildError(SystemExit):
    """A configure or build step that failed; `output` holds its lines (ninja's FAILED: blocks)."""

    def __init__(self, msg: str, output: list[str]):
        super().__init__(msg)
        self.output = output


def configure_and_build(preset: str, log_file: Path | None = None, jobs: int | None = None,
                        targets: list[str] | None = None, cmake_args: list[str] | None = None,
                        configure: bool = True, verbose: bool = False, keep_going: bool = False) -> None:
    """cmake --preset, then cmake --build (all, or `targets`). With a log file the output goes
    there as it comes (the log is live), the terminal gets ninja's [n/N] line every
    PROGRESS_SECONDS, and a failure shows its compiler errors first. keep_going: build everything
    that does not depend on a failed step (ninja -k 0), so that one file that does not compile
    leaves every other target built and the failures all listed (BuildError.output)."""
    if verbose:
        log_file = None  # everything on the terminal
    quiet = log_file is not None
    if configure or not (build_dir(preset) / "CMakeCache.txt").exists():
        _run_build_step(["cmake", "--preset", preset, *(cmake_args or [])], log_file, quiet)
    cmd = ["cmake", "--build", "--preset", preset]
    if jobs:
        cmd += ["-j", str(jobs)]
    if targets:
        cmd += ["--target", *targets]
    if keep_going:
        cmd += ["--", "-k", "0"]
    _run_build_step(cmd, log_file, quiet)


# A build with its output in a log prints ninja's progress line this often (a first build takes
# minutes on a laptop: silence that long reads as a hang).
PROGRESS_SECONDS = 15.0


NINJA_STEP = re.compile(r"^\[(\d+)/(\d+)\] (.*)$")


def _stream(cmd: list[str], log_file: Path | None) -> tuple[int, list[str]]:
    """Runs cmd, each output line appended to log_file as it comes, and ninja's [n/N] line on the
    terminal every PROGRESS_SECONDS (and the last one); without a log file every line goes to the
    terminal. Returns (exit status, output lines)."""
    import contextlib
    import time
    echo = log_file is None
    if echo:
        log("$ " + " ".join(cmd))
    else:
        log_file.parent.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    last, shown, pending = 0.0, "", ""
    with (open(log_file, "a") if log_file else contextlib.nullcontext(sys.stdout)) as f:
        if not echo:
            f.write("$ " + " ".join(cmd) + "\n")
            f.flush()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                errors="replace", bufsize=1)
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                f.write(line)
                f.flush()
                line = line.rstrip("\n")
                lines.append(line)
                m = NINJA_STEP.match(line) if not echo else None
                if m:
                    pending = f"  build [{m.group(1)}/{m.group(2)}] {m.group(3)[:100]}"
                    now = time.monotonic()
                    if now - last >= PROGRESS_SECONDS:
                        log(pending)
                        last, shown = now, pending
            rc = proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    if pending and pending != shown and last:
        log(pending)
    return rc, lines


def _run_build_step(cmd: list[str], log_file: Path | None, quiet: bool) -> None:
    rc, out = _stream(cmd, log_file if quiet else None)
    if rc != 0:
        errors = [l for l in out if re.search(r"\berror\b|Error|FAILED:", l)]
        shown = (errors[:25] + ["..."] if len(errors) > 25 else errors) or out[-40:]
        raise BuildError(f"command failed ({rc}): {' '.join(cmd)}\n" + "\n".join(shown)
                         + (f"\n(full output: {log_file})" if log_file else ""), out)


STARTER_OBJECT = re.compile(r"chapters/([0-9][0-9]_\w+)/CMakeFiles/\w+\.dir/starter/(\S+?)\.o\b")


ERROR_LINE = re.compile(r"\b(?:fatal )?error\b")


ERROR_FILE = re.compile(r"^(\S+?)(?:\((\d+)\)|:(\d+):)")


def failed_starter_sources(output: list[str]) -> dict[str, str]:
    """From a keep-going build's output: each starter file (chapters/NN_slug/starter/x.cu) whose
    object did not compile -> its first compiler error (file:line: message, paths relative to the
    tree). A starter header named by that error is listed too (its includers fail with it)."""
    failed: dict[str, str] = {}
    i = 0
    while i < len(output):
        m = STARTER_OBJECT.search(output[i]) if output[i].startswith("FAILED:") else None
        if not m:
            i += 1
            continue
        rel = f"chapters/{m.group(1)}/starter/{m.group(2)}"
        first = ""
        j = i + 2  # the line after FAILED: is the compiler's command line
        while j < len(output) and not output[j].startswith("FAILED:") and not NINJA_STEP.match(output[j]):
            if not first and ERROR_LINE.search(output[j]):
                # paths relative to the tree (the build runs in build/<preset>: ../../chapters/...)
                first = re.sub(r"^(\.\./)+", "", output[j].strip().replace(str(ROOT) + "/", ""))
            j += 1
        failed.setdefault(rel, first or "(no error line: see the build log)")
        f = ERROR_FILE.match(first)
        if f and "/starter/" in f.group(1) and f.group(1).startswith("chapters/") and f.group(1) != rel:
            failed.setdefault(f.group(1), first)
        i = j
    return failed


PRISTINE_DIR = ".cudalab/pristine"


def pristine_text(rel: str, root: Path | None = None) -> str | None:
    """The untouched version of a starter file: the handout's hidden copy (.cudalab/pristine/,
    written by scripts/lab handout and by scripts/grade --submission), else the committed one (git
    HEAD). None when neither exists."""
    root = root or ROOT
    hidden = root / PRISTINE_DIR / rel
    if hidden.is_file():
        return hidden.read_text()
    p = subprocess.run(["git", "show", f"HEAD:./{rel}"], cwd=root, capture_output=True, text=True)
    return p.stdout if p.returncode == 0 else None


SCRATCH_SKIP = {"build", ".git", "grades"}


def scratch_tree(replace: dict[str, str], name: str = "fallback") -> Path:
    """A copy of this tree's sources under build/scratch-<name>/ (its own build directory inside
    it), with the files of `replace` (relative path -> text) written over the copies. Files whose
    content did not change are left as they are, so a second call rebuilds only what changed.
    The tree itself is only read."""
    dest = ROOT / "build" / f"scratch-{name}"
    keep: set[Path] = set()
    sources = []
    for d, dirs, files in os.walk(ROOT):
        if Path(d) == ROOT:
            dirs[:] = [x for x in dirs if x not in SCRATCH_SKIP]  # never walk the build trees
        sources += [Path(d) / f for f in files]
    for src in sources:
        rel = src.relative_to(ROOT)
        if not src.is_file() or src.is_symlink():
            continue
        dst = dest / rel
        keep.add(dst)
        text = replace.get(rel.as_posix())
        data = text.encode() if text is not None else src.read_bytes()
        if not dst.is_file() or dst.read_bytes() != data:
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(data)
            if text is None:
                shutil.copystat(src, dst)
    for d, dirs, files in os.walk(dest):
        if Path(d) == dest:
            dirs[:] = [x for x in dirs if x not in SCRATCH_SKIP]
        for f in files:
            if Path(d) / f not in keep:
                (Path(d) / f).unlink()
    return dest


def exercises_of_file(rel: str, root: Path | None = None) -> list[str]:
    """The exercises whose regions a starter file holds: from its reference file where there is
    one, else from the file's own marks (a handout), else from its pristine copy."""
    import regions
    root = root or ROOT
    cands = [root / rel.replace("/starter/", "/reference/", 1), root / rel]
    for c in cands:
        if c.is_file():
            try:
                rs = regions.parse(c.read_text(errors="replace"), str(c))[1]
            except regions.RegionError:
                continue
            if rs:
                return sorted({r.exercise for r in rs}, key=lambda e: [int(x) for x in e.split(".")])
    text = pristine_text(rel, root)
    if text:
        try:
            return sorted({r.exercise for r in regions.parse(text)[1]}, key=lambda e: [int(x) for x in e.split(".")])
        except regions.RegionError:
            pass
    return []


def compile_fallback(err: BuildError, who: str) -> tuple[Path, dict] | None:
    """After a keep-going build failed: the starter files that did not compile, replaced by their
    pristine versions in a scratch copy of the tree (scratch_tree), so that every other exercise
    can still be built and graded. Returns (the scratch tree, {file: {error, exercises}}), or None
    when no starter file failed (the failure is elsewhere: the caller reports it)."""
    broken = failed_starter_sources(err.output)
    if not broken:
        return None
    replace, report = {}, {}
    for rel, first in broken.items():
        text = pristine_text(rel)
        if text is None:
            die(f"{who}: {rel} does not compile ({first}) and no pristine copy of it exists here")
        replace[rel] = text
        report[rel] = {"error": first, "exercises": exercises_of_file(rel)}
    for rel, r in report.items():
        log(f"{who}: {rel} does not compile: {r['error']}")
        log(f"  -> exercises {', '.join(r['exercises']) or '(none)'} score 0; the file's untouched version is "
            "built in its place (in a copy of the tree) so that the others are still judged")
    return scratch_tree(replace), report
