"""Shared helpers of the lab scripts (lab, grade, gpu_suite, report): presets, builds, ctest runs
with labels and JUnit results, exercise and pitfall bookkeeping. Standard library only."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import gradelib  # noqa: E402  (what a test's labels say: one reading for grading and running)
# ctest label of the tests of a pitfall declared `lab_pitfall(... RACE)` (cmake/CudalabHelpers.cmake):
# its bug is a shared-memory race, which compute-sanitizer racecheck finds on every run.
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


class BuildError(SystemExit):
    """A configure or build step that failed; `output` holds its lines (ninja's FAILED: blocks)."""

    def __init__(self, msg: str, output: list[str]):
        super().__init__(msg)
        self.output = output


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


# ---------------------------------------------------------------------------------------------
# ctest with labels

@dataclass
class TestResult:
    name: str
    labels: list[str]
    status: str          # passed | failed | skipped
    output: str = ""
    time: float = 0.0    # seconds (GoogleTest's XML)

    @property
    def chapter(self) -> str:
        return gradelib.chapter_of(self.labels)

    @property
    def exercises(self) -> list[str]:
        return gradelib.exercises_in(self.labels)

    @property
    def pitfall(self) -> str | None:
        return next((l[8:] for l in self.labels if l.startswith("pitfall:")), None)

    @property
    def kind(self) -> str:
        return gradelib.kind_of(self.labels)

    @property
    def race(self) -> bool:
        """A test of a pitfall declared RACE (its bug is a shared-memory race)."""
        return RACE_LABEL in self.labels


def list_tests(bdir: Path, labels: list[str], with_command: bool = False) -> dict:
    """ctest name -> labels (or -> (labels, command) with_command) of the tests carrying all labels."""
    cmd = ["ctest", "--test-dir", str(bdir), "--show-only=json-v1"]
    for l in labels:
        cmd += ["-L", label_regex(l)]  # ctest -L is a regex: anchor it, so ex:5.1 is not ex:5.10
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    tests = {}
    for t in json.loads(out).get("tests", []):
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        labels_ = list(props.get("LABELS", []))
        if not all(l in labels_ for l in labels):
            continue
        command = t.get("command") or [e.split("=", 1)[1] for e in props.get("ENVIRONMENT", [])
                                       if e.startswith("CUDALAB_TEST_EXE=")]
        tests[t["name"]] = (labels_, command) if with_command else labels_
    return tests


def label_regex(label: str) -> str:
    """A ctest -L regular expression that matches exactly `label`. The label is plain text: an
    anchored one ('^mutant$') would be escaped and then match nothing, so it is refused."""
    if label.startswith("^") or label.endswith("$"):
        raise ValueError(f"label {label!r}: labels are matched exactly already; pass the plain label")
    return "^" + re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", label) + "$"


# GoogleTest suites whose tests break the CUDA context on purpose (a sticky fault): they must run
# in a process of their own, so run_reference() gives them to ctest (one process per test).
FAULT_SUITE = "FaultGpu"


def _suite_of(case: str) -> str:
    """'Prefix/SuiteGpu.Test/3' -> 'SuiteGpu'."""
    return case.split(".")[0].split("/")[-1]


def read_gtest_xml(xml: Path) -> dict[str, tuple[str, str, float]]:
    """GoogleTest's XML -> 'Suite.Test' -> (status, message, seconds): the message is the failure
    text, or the skip message ('file:line\nskipped: <reason>')."""
    seen: dict[str, tuple[str, str, float]] = {}
    if not xml.exists():
        return seen
    try:
        root = ET.parse(xml).getroot()
    except ET.ParseError:
        return seen
    for case in root.iter("testcase"):
        full = f"{case.get('classname')}.{case.get('name')}"
        failures = case.findall("failure")
        skipped = case.find("skipped")
        try:
            secs = float(case.get("time", "0") or 0)
        except ValueError:
            secs = 0.0
        if failures:
            seen[full] = ("failed", "\n".join((f.text or f.get("message", "")).strip() for f in failures), secs)
        elif case.get("result") == "skipped" or skipped is not None:
            seen[full] = ("skipped", (skipped.get("message", "") or skipped.text or "") if skipped is not None else "", secs)
        else:
            seen[full] = ("passed", "", secs)
    return seen


def run_by_executable(bdir: Path, labels: list[str], xml_dir: Path, jobs: int,
                      skip_suite: str | None = None, only_suite: str | None = None,
                      per_case: bool = False, serial: bool = False,
                      tests: dict | None = None) -> list[TestResult]:
    """Runs each test executable once (all its cases in one process) instead of one process per
    case: much faster on a GPU (one CUDA context per executable; ctest's one process per case
    spends most of its time creating contexts). Results are per case, read from GoogleTest's XML,
    with the failure text or the skip message; a fault that kills the process marks the cases it
    did not report as failed. Cases of suites ending in `skip_suite` (a str or a tuple) are left
    out; with `only_suite`, only the cases of suites ending in it run. per_case: one process per
    case (for suites that break the CUDA context on purpose). serial: one executable at a time
    (suites that need most of the device memory)."""
    import concurrent.futures as cf
    tests = tests if tests is not None else list_tests(bdir, labels, with_command=True)
    skips = (skip_suite,) if isinstance(skip_suite, str) else tuple(skip_suite or ())
    by_exe: dict[str, dict[str, tuple[str, list[str]]]] = defaultdict(dict)
    broken: list[TestResult] = []  # NOT_BUILT / LIST_FAILED entries of the discovery: no case to run
    plain: list[tuple[str, list[str], list[str]]] = []  # tests that are not GoogleTest cases
    for name, (labels_, command) in tests.items():
        if len(command) >= 2 and command[1].startswith("--gtest_filter="):
            case = command[1].split("=", 1)[1]
            suite = _suite_of(case)
            if any(suite.endswith(k) for k in skips) or (only_suite and not suite.endswith(only_suite)):
                continue
            by_exe[command[0]][case] = (name, labels_)
        elif only_suite:
            continue
        elif ".NOT_BUILT." in name or ".LIST_FAILED." in name:
            why = "not built" if ".NOT_BUILT." in name else "its test list could not be read"
            broken.append(TestResult(name, labels_, "failed", f"{why}: " + " ".join(command)))
        elif command:
            plain.append((name, labels_, command))
    xml_dir.mkdir(parents=True, exist_ok=True)

    def run_plain(job: tuple[str, list[str], list[str]]) -> list[TestResult]:
        """A test that is not a GoogleTest case (a launcher such as mpiexec, a tool): the whole
        command, passed on exit 0, skipped when a line of its output starts with 'skipped: ' (the
        project's ctest SKIP_REGULAR_EXPRESSION), else failed."""
        name, labels_, command = job
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=test_timeout(),
                                  cwd=Path(command[0]).parent if Path(command[0]).is_absolute() else None)
            rc, text = proc.returncode, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as e:
            rc, text = None, f"timed out after {e.timeout} s"
        except OSError as e:
            rc, text = None, f"could not run: {e}"
        (xml_dir / (re.sub(r"[^\w.-]", "_", name) + ".log")).write_text("$ " + " ".join(command) + "\n" + text)
        skip = next((l for l in text.splitlines() if l.startswith("skipped: ")), None)
        if skip is not None:
            return [TestResult(name, labels_, "skipped", skip)]
        if rc == 0:
            return [TestResult(name, labels_, "passed", "")]
        return [TestResult(name, labels_, "failed", f"exited {rc}: " + " ".join(command) + "\n"
                           + "\n".join(text.splitlines()[-15:]))]

    def one(job: tuple[str, list[str], str]) -> list[TestResult]:
        """One process for the cases of one executable. A process that crashes or hangs past
        test_timeout() does not take the others with it: the case it was running (its last
        '[ RUN      ]' line) is failed with the crash or the timeout, and the cases it did not
        report run again in a new process, until all have a result."""
        exe, cases, part = job
        tag = Path(exe).name + (("." + re.sub(r"[^\w.-]", "_", cases[0])) if per_case else part)
        out: dict[str, TestResult] = {}
        todo = list(cases)
        attempt = 0
        while todo:
            suffix = f".rerun{attempt}" if attempt else ""
            xml = xml_dir / (tag + suffix + ".xml")
            logf = xml_dir / (tag + suffix + ".log")
            xml.unlink(missing_ok=True)
            cmd = [exe, f"--gtest_output=xml:{xml}", "--gtest_filter=" + ":".join(todo)]
            rc, text = run_limited(cmd, logf, test_timeout(), cwd=Path(exe).parent)
            seen = read_gtest_xml(xml)
            for full in todo:
                if full in seen:
                    name, labels_ = by_exe[exe][full]
                    out[full] = TestResult(name, labels_, *seen[full])
            left = [c for c in todo if c not in out]
            if not left:
                break
            why = ("timed out after " + f"{test_timeout():g} s" if rc is None else
                   f"crashed ({signal_name(rc)})" if rc < 0 or rc > 1 else f"exited {rc} before reporting")
            running = last_running_case(text)
            culprit = running if running in left else None
            tail = "\n".join(text.splitlines()[-15:])
            if culprit is None or attempt >= MAX_RERUNS:
                for full in left:
                    name, labels_ = by_exe[exe][full]
                    out[full] = TestResult(name, labels_, "failed",
                                           f"the test process {why} before reporting this case (log: {logf})\n{tail}")
                break
            name, labels_ = by_exe[exe][culprit]
            out[culprit] = TestResult(name, labels_, "failed", f"this test {why} (log: {logf})\n{tail}")
            todo = [c for c in left if c != culprit]
            attempt += 1
        return [out[c] for c in cases]

    if per_case:
        work = [(exe, [c], "") for exe, cs in by_exe.items() for c in cs]
    else:
        # one process per executable; a --gtest_filter longer than ~64 KB (one argument may not
        # exceed 128 KB) is split over several processes
        work = []
        for exe, cs in by_exe.items():
            chunk: list[str] = []
            size = 0
            for c in cs:
                if chunk and size + len(c) + 1 > 64_000:
                    work.append((exe, chunk, f".part{len(work)}"))
                    chunk, size = [], 0
                chunk.append(c)
                size += len(c) + 1
            if chunk:
                work.append((exe, chunk, "" if not any(w[0] == exe for w in work) else f".part{len(work)}"))
    results: list[TestResult] = list(broken)
    with cf.ThreadPoolExecutor(max_workers=1 if serial else max(1, jobs)) as pool:
        for r in pool.map(one, work):
            results.extend(r)
        for r in pool.map(run_plain, plain):
            results.extend(r)
    return results


# A test process that runs longer than this is stopped (a kernel that never ends: a hang must
# not stop the grading). CUDALAB_TEST_TIMEOUT (seconds) overrides it.
DEFAULT_TEST_TIMEOUT = 900.0
MAX_RERUNS = 64  # crashes of one executable after which its remaining cases are failed unrun


def test_timeout() -> float:
    try:
        v = float(os.environ.get("CUDALAB_TEST_TIMEOUT", DEFAULT_TEST_TIMEOUT))
    except ValueError:
        return DEFAULT_TEST_TIMEOUT
    return v if v > 0 else DEFAULT_TEST_TIMEOUT


def run_limited(cmd: list[str], log_file: Path, timeout: float, cwd: Path | None = None) -> tuple[int | None, str]:
    """Runs cmd in its own process group with its output in log_file; (exit status or None when
    it ran past `timeout` and was killed, the output)."""
    import signal
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "w") as f:
        try:
            proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True)
        except OSError as e:
            f.write(f"could not run: {e}\n")
            return 127, f"could not run: {e}"
        try:
            rc: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
    return rc, log_file.read_text(errors="replace")


def signal_name(rc: int) -> str:
    import signal
    if rc < 0:
        try:
            return f"signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"signal {-rc}"
    return f"exit status {rc}"


def last_running_case(text: str) -> str | None:
    """The GoogleTest case a process was running when it stopped: its last '[ RUN      ] X' line
    without a result line after it."""
    running = None
    for line in text.splitlines():
        m = re.match(r"\[ RUN      \] (\S+)", line)
        if m:
            running = m.group(1)
        elif running and re.match(r"\[ +(OK|FAILED|SKIPPED) +\] " + re.escape(running), line):
            running = None
    return running


# Suites that break the CUDA context on purpose (one process per case) and suites that need most
# of the device memory (one executable at a time): cmake/CudalabDiscover.cmake gives the latter a
# RESOURCE_LOCK under ctest.
LARGE_SUITE = "LargeGpu"


def run_tests(bdir: Path, labels: list[str], work: Path, jobs: int, large: bool = True) -> list[TestResult]:
    """Every test carrying all `labels` (exactly), a result per test, fast: one process per
    executable; the large-memory suites one executable at a time (left out, with no result, when
    large is false); the deliberate-fault suites one process per case."""
    tests = list_tests(bdir, labels, with_command=True)
    tag = "_".join(re.sub(r"[^\w.-]", "_", l) for l in labels) or "all"
    res = run_by_executable(bdir, labels, work / tag, jobs, skip_suite=(FAULT_SUITE, LARGE_SUITE), tests=tests)
    if large:
        res += run_by_executable(bdir, labels, work / (tag + "_large"), jobs, only_suite=LARGE_SUITE,
                                 serial=True, tests=tests)
    res += run_by_executable(bdir, labels, work / (tag + "_faults"), jobs, only_suite=FAULT_SUITE,
                             per_case=True, tests=tests)
    return res


@dataclass
class JunitCase:
    classname: str
    name: str
    status: str          # passed | failed | skipped
    message: str = ""    # the failure's or skip's one-line message
    text: str = ""       # the failure's full text
    system_out: str = "" # what else a reader needs (labels, score)
    time: float = 0.0


def _xml_text(s: str) -> str:
    """Text XML 1.0 can hold: control characters (a crashed test's output) become '?'."""
    return re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", "?", s or "")


def write_junit_cases(cases: list[JunitCase], path: Path, suite_name: str = "cudalab") -> None:
    """JUnit XML as the common schema has it (tests/fixtures/junit.xsd; scripts/test_junit.py
    checks it): one <testsuite> with name, tests, failures, errors, skipped, time, timestamp and
    hostname; each <testcase> has name, classname and time, and holds at most one of <failure> /
    <skipped>, then <system-out>; no <properties> inside a testcase."""
    import datetime
    import socket
    suite = ET.Element("testsuite", name=suite_name, tests=str(len(cases)),
                       failures=str(sum(c.status == "failed" for c in cases)), errors="0",
                       skipped=str(sum(c.status == "skipped" for c in cases)),
                       time=f"{sum(c.time for c in cases):.3f}",
                       timestamp=datetime.datetime.now().replace(microsecond=0).isoformat(),
                       hostname=socket.gethostname() or "localhost")
    for c in cases:
        case = ET.SubElement(suite, "testcase", name=c.name, classname=c.classname, time=f"{c.time:.3f}")
        if c.status == "failed":
            f = ET.SubElement(case, "failure", message=_xml_text(c.message)[:200] or "failed", type="failure")
            f.text = _xml_text(c.text)
        elif c.status == "skipped":
            ET.SubElement(case, "skipped", message=_xml_text(c.message)[:500])
        if c.system_out:
            ET.SubElement(case, "system-out").text = _xml_text(c.system_out)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def write_junit(results: list[TestResult], path: Path, suite_name: str = "cudalab") -> None:
    """One JUnit testcase per test (for a CI or an LMS), with the failure text or skip reason;
    its ctest labels in its system-out."""
    write_junit_cases([JunitCase(r.chapter, r.name, r.status,
                                 (r.output.splitlines() or ["failed"])[0] if r.status == "failed" else r.output.strip(),
                                 r.output if r.status == "failed" else "",
                                 "labels: " + ";".join(r.labels) if r.labels else "", r.time)
                       for r in results], path, suite_name)


def to_cases(results: list[TestResult]) -> list:
    return [gradelib.Case(r.name, list(r.labels), r.status, r.output) for r in results]


def run_reference(bdir: Path, labels: list[str], work: Path, jobs: int) -> list[TestResult]:
    """The reference track with a result per test, fast (see run_tests)."""
    return run_tests(bdir, labels, work, jobs)


def count(results: list[TestResult]) -> dict[str, int]:
    c = {"passed": 0, "failed": 0, "skipped": 0}
    for r in results:
        c[r.status] += 1
    return c


def count_line(c: dict[str, int]) -> str:
    return f"{c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped"


# ---------------------------------------------------------------------------------------------
# exercises and pitfalls

@dataclass
class ExerciseStatus:
    exercise: str
    chapter: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    failing: list[str] = field(default_factory=list)

    @property
    def ran(self) -> int:
        return self.passed + self.failed

    @property
    def graded(self) -> bool:
        """A failure always counts; a pass counts only when none of the exercise's tests was
        skipped (CPU argument checks alone must not make an unwritten kernel look done)."""
        return self.failed > 0 or (self.skipped == 0 and self.ran > 0)

    @property
    def state(self) -> str:
        if self.failed > 0:
            return "not started" if self.passed == 0 else "in progress"
        return "done" if self.graded else "not graded (needs a GPU)"


def exercise_table(results: list[TestResult], kinds: tuple[str, ...] = ("cpu", "gpu")) -> dict[str, ExerciseStatus]:
    table: dict[str, ExerciseStatus] = {}
    for r in results:
        if r.kind not in kinds:
            continue
        for ex in r.exercises:
            s = table.setdefault(ex, ExerciseStatus(ex, r.chapter))
            setattr(s, r.status, getattr(s, r.status) + 1)
            if r.status == "failed":
                s.failing.append(r.name)
    return dict(sorted(table.items(), key=lambda kv: [int(x) for x in kv[0].split(".")]))


def pitfall_table(results: list[TestResult]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = defaultdict(lambda: {"passed": 0, "failed": 0, "skipped": 0})
    for r in results:
        if r.pitfall:
            table[r.pitfall][r.status] += 1
    return dict(sorted(table.items()))


def race_pitfall_executables(tests: dict) -> dict[str, list[str]]:
    """pitfall -> its test executables, for the pitfalls declared RACE. `tests` is what
    list_tests(..., with_command=True) returns (name -> (labels, command)). The label must match
    exactly: ctest's -L is a regular expression, and a pitfall named "trace_..." contains "race"."""
    exes: dict[str, set[str]] = defaultdict(set)
    for labels, command in tests.values():
        pitfall = next((l[8:] for l in labels if l.startswith("pitfall:")), None)
        if pitfall and RACE_LABEL in labels and command:
            exes[pitfall].add(command[0])
    return {p: sorted(e) for p, e in sorted(exes.items())}


# ---------------------------------------------------------------------------------------------
# compute-sanitizer results and the pitfall verdict

@dataclass
class SanitizerRun:
    """One compute-sanitizer run of one test executable."""
    exe: str
    tool: str                # memcheck | racecheck
    returncode: int | None   # None: it did not finish (timed out)
    summary: str             # the tool's SUMMARY line, or why there is none
    count: int | None        # errors (memcheck) or hazards (racecheck) in that line; None without one

    @property
    def clean(self) -> bool:
        """The tool ran to its summary and reported nothing."""
        return self.count == 0

    @property
    def found(self) -> bool:
        """The tool reported at least one error or hazard (by its summary or by its exit status)."""
        return (self.count or 0) > 0 or self.returncode == SANITIZER_ERROR_EXITCODE


def parse_sanitizer(exe: str, tool: str, returncode: int | None, output: str) -> SanitizerRun:
    """Reads the summary line of a compute-sanitizer run:
        ========= ERROR SUMMARY: 3 errors                                  (memcheck)
        ========= RACECHECK SUMMARY: 12 hazards displayed (12 errors, 0 warnings)   (racecheck)
    The racecheck count is of hazards, errors and warnings alike (a warning is still a race)."""
    lines = output.splitlines()
    own = "RACECHECK SUMMARY" if tool == "racecheck" else "ERROR SUMMARY"
    line = next((l for l in lines if own in l), None) or \
        next((l for l in lines if "ERROR SUMMARY" in l or "RACECHECK SUMMARY" in l), None)
    if line is None:
        why = "timed out" if returncode is None else f"exited {returncode}"
        return SanitizerRun(exe, tool, returncode, f"no summary line ({why}; see log)", None)
    m = re.search(r"SUMMARY: (\d+) (error|hazard)", line)
    return SanitizerRun(exe, tool, returncode, line.strip(" =\t"), int(m.group(1)) if m else None)


def judge_pitfall(counts: dict[str, int], race: bool = False,
                  racecheck: list[SanitizerRun] | None = None, racecheck_note: str = "") -> dict:
    """The GPU suite's verdict on one pitfall, as it goes into summary.json.

    counts: its tests' results (passed / failed / skipped, from pitfall_table). Caught when a test
    fails. A race pitfall (race=True) is also caught when racecheck reports a hazard on one of
    its test executables: a race makes a test fail only on some runs, racecheck sees it on every
    run. racecheck: the racecheck runs of its executables; None when they did not run, with
    racecheck_note saying why (e.g. --skip-sanitizer). A race pitfall that fails no test and shows
    no hazard is not caught."""
    v: dict = {"passed": counts.get("passed", 0), "failed": counts.get("failed", 0),
               "skipped": counts.get("skipped", 0), "race": race}
    caught_by = []
    if v["failed"]:
        caught_by.append(f"tests ({v['failed']} failed)")
    notes = []
    if race:
        if racecheck is None:
            v["racecheck"] = None
            notes.append(f"racecheck not run ({racecheck_note or 'no reason given'})")
        elif not racecheck:
            v["racecheck"] = {}
            notes.append(f"racecheck had nothing to run ({racecheck_note or 'no GPU tests in its executables'})")
        else:
            v["racecheck"] = {r.exe: r.summary for r in racecheck}
            hits = [r for r in racecheck if r.found]
            v["hazards"] = sum(r.count or 0 for r in hits)
            if hits:
                known = all(r.count for r in hits)
                caught_by.append(f"racecheck ({v['hazards']} hazards)" if known else
                                 f"racecheck (exit {SANITIZER_ERROR_EXITCODE}; hazards: see its log)")
            elif all(r.clean for r in racecheck):
                notes.append("racecheck found no hazard although the pitfall is declared RACE")
            else:
                notes.append("racecheck did not finish: " + "; ".join(
                    f"{r.exe}: {r.summary}" for r in racecheck if not r.clean))
    v["caught"] = bool(caught_by)
    v["caught_by"] = caught_by
    v["notes"] = notes
    return v


def pitfall_evidence(v: dict) -> str:
    """What a verdict of judge_pitfall rests on: the test counts, then any notes on racecheck."""
    return "; ".join([f"tests: {count_line(v)}"] + list(v.get("notes", [])))


def pitfall_line(name: str, v: dict) -> str:
    """One line of summary.md for a verdict of judge_pitfall, e.g.
    ch06.missing_second_sync [race]: caught by racecheck (96 hazards) (tests: 244 passed, 0 failed, 0 skipped)"""
    how = ("caught by " + " and ".join(v["caught_by"])) if v["caught"] else "NOT CAUGHT"
    return f"{name}{' [race]' if v.get('race') else ''}: {how} ({pitfall_evidence(v)})"


def chapter_titles() -> dict[str, str]:
    titles = {}
    for d in sorted((ROOT / "chapters").glob("[0-9][0-9]_*")):
        titles["ch" + d.name[:2]] = d.name[3:].replace("_", " ")
    return titles


def bench_executables(bdir: Path, track: str = "reference") -> list[Path]:
    """bench_chNN (reference track) or bench_chNN_starter (track "starter")."""
    exes = [p for p in (bdir / "bench").glob("bench_ch*") if p.is_file() and os.access(p, os.X_OK)]
    if track == "starter":
        return sorted(p for p in exes if p.name.endswith("_starter"))
    return sorted(p for p in exes if not p.name.endswith("_starter"))


def min_time_flag(exe: Path, seconds: float) -> str:
    """--benchmark_min_time in the form this Google Benchmark takes: 1.8+ wants a unit ("0.1s"),
    1.7 only a plain number."""
    probe = subprocess.run([str(exe), f"--benchmark_min_time={seconds}s", "--benchmark_filter=^$"],
                           capture_output=True, text=True)
    return f"--benchmark_min_time={seconds}s" if probe.returncode == 0 else f"--benchmark_min_time={seconds}"


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


# ---------------------------------------------------------------------------------------------
# dependencies (scripts/deps.txt is the one list; .ci/run reads it too)

DEPS_FILE = ROOT / "scripts" / "deps.txt"


def read_deps(path: Path = DEPS_FILE) -> list[tuple[str, str, str]]:
    """(package, kind, what) per line of deps.txt: kind is cmd or file."""
    out = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        pkg, probe, *flags = line.split()
        if "ci-only" in flags and os.environ.get("CI") != "true":
            continue  # a CI check's tool (clang-format): not needed to build, test or grade
        kind, what = probe.split(":", 1)
        out.append((pkg, kind, what))
    return out


def missing_deps(deps: list[tuple[str, str, str]] | None = None) -> list[str]:
    missing = []
    for pkg, kind, what in deps if deps is not None else read_deps():
        ok = shutil.which(what) is not None if kind == "cmd" else Path(what).exists()
        if not ok:
            missing.append(pkg)
    return missing


def install_command(pkgs: list[str], as_root: bool) -> list[str]:
    apt = ["apt-get", "install", "-y", "--no-install-recommends", *pkgs]
    return apt if as_root else ["sudo", *apt]


def ensure_deps(install: bool = True) -> None:
    """Installs the missing packages when this runs as root or with passwordless sudo; otherwise
    stops with the one command to run. Also puts the CUDA toolkit's bin on PATH when nvcc is only
    in /usr/local/cuda/bin."""
    if shutil.which("nvcc") is None and Path("/usr/local/cuda/bin/nvcc").exists():
        os.environ["PATH"] = "/usr/local/cuda/bin:" + os.environ.get("PATH", "")
    if shutil.which("apt-get") is None and missing_deps():
        die("missing: " + " ".join(missing_deps()) + " (Debian/Ubuntu package names; install them, then rerun)")
    missing = missing_deps()
    if missing:
        root = hasattr(os, "geteuid") and os.geteuid() == 0
        sudo = not root and shutil.which("sudo") is not None and \
            subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0
        cmd = install_command(missing, root)
        if not install or not (root or sudo):
            die("cudalab needs: " + " ".join(missing) + "\nrun:  " + " ".join(install_command(missing, False))
                + "\nthen rerun this command.")
        log("installing " + " ".join(missing) + " ...")
        pre = ["apt-get", "update", "-qq"] if root else ["sudo", "apt-get", "update", "-qq"]
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        for c in (pre, cmd):
            try:  # a machine without network must get an answer, not a hang
                p = subprocess.run(c, env=env, capture_output=True, text=True, timeout=600)
            except subprocess.TimeoutExpired:
                die(f"{' '.join(c)} did not finish in 10 minutes (no network?); install "
                    + " ".join(missing) + " by hand, then rerun")
            if p.returncode != 0:
                die(f"{' '.join(c)} failed:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
        still = missing_deps()
        if still:
            die("still missing after apt-get: " + " ".join(still))
    if shutil.which("nvcc") is None:
        die("no CUDA toolkit: nvcc is neither on PATH nor in /usr/local/cuda/bin. Install the CUDA "
            "toolkit (12.x or 13.x; https://developer.nvidia.com/cuda-downloads), then rerun.")


# ---------------------------------------------------------------------------------------------
# Mutants (chapters/NN_slug/mutants.toml): small bugs generated from the reference kernels. The
# GPU suite builds each one (-DCUDALAB_MUTANTS=ON; ctest labels mutant, mutant:chNN.<name>, and
# race for a removed barrier), runs its exercise's tests and reports the share caught ("killed").

MUTANT_LABEL = "mutant"
MUTANT_KEYS = {"name": str, "exercise": str, "find": str, "replace": str, "race": bool, "why": str}


def load_mutants(chapter_dir: Path) -> list[dict]:
    """The [[mutant]] entries of chapter_dir/mutants.toml ([] when there is none)."""
    import tomllib
    f = Path(chapter_dir) / "mutants.toml"
    if not f.exists():
        return []
    return list(tomllib.loads(f.read_text()).get("mutant", []))


def reference_texts(chapter_dir: Path) -> dict[str, str]:
    """Relative path -> text of every file under chapter_dir/reference (where mutants apply)."""
    ref = Path(chapter_dir) / "reference"
    return {str(p.relative_to(chapter_dir)): p.read_text() for p in sorted(ref.rglob("*")) if p.is_file()}


def mutant_problems(mutants: list[dict], texts: dict[str, str], chapter: str = "") -> list[str]:
    """What is wrong with a chapter's mutants: a missing or mistyped key, a name used twice, an
    exercise that is not N.k, a `find` that occurs other than exactly once in the reference files
    (all of them together: a mutant names no file, so it survives files being moved or renamed),
    or a `replace` equal to its `find`. Empty when all is well."""
    out, seen = [], set()
    for i, m in enumerate(mutants):
        where = f"{chapter + ': ' if chapter else ''}mutant {m.get('name', f'#{i + 1}')}"
        for key, typ in MUTANT_KEYS.items():
            if not isinstance(m.get(key), typ):
                out.append(f"{where}: '{key}' missing or not a {typ.__name__}")
        unknown = set(m) - set(MUTANT_KEYS)
        if unknown:
            out.append(f"{where}: unknown keys {sorted(unknown)}")
        name = m.get("name")
        if isinstance(name, str):
            if not re.fullmatch(r"[a-z0-9_]+", name):
                out.append(f"{where}: a name is lower_snake_case")
            if name in seen:
                out.append(f"{where}: the name is used twice")
            seen.add(name)
        if isinstance(m.get("exercise"), str) and not re.fullmatch(r"\d+\.\d+", m["exercise"]):
            out.append(f"{where}: exercise '{m['exercise']}' is not N.k")
        find = m.get("find")
        if isinstance(find, str) and find:
            hits = [(f, t.count(find)) for f, t in texts.items() if find in t]
            total = sum(k for _, k in hits)
            if total != 1:
                at = ", ".join(f"{f} x{k}" for f, k in hits) or "nowhere"
                out.append(f"{where}: 'find' occurs {total} times in reference/ (must be once): {at}")
            if find == m.get("replace"):
                out.append(f"{where}: 'replace' equals 'find'")
    return out


def mutant_of(labels: list[str]) -> str | None:
    """'chNN.<name>' from a test's ctest labels (mutant:chNN.<name>), else None."""
    return next((l[len(MUTANT_LABEL) + 1:] for l in labels if l.startswith(MUTANT_LABEL + ":")), None)


def mutant_table(results: list[TestResult]) -> dict[str, dict[str, int]]:
    """mutant -> counts of its tests' results (passed / failed / skipped / not_built), where a
    test that is no GoogleTest case (discovery said NOT_BUILT or could not list it) counts as
    not_built, never as a kill."""
    table: dict[str, dict[str, int]] = defaultdict(lambda: {"passed": 0, "failed": 0, "skipped": 0, "not_built": 0})
    for r in results:
        name = mutant_of(r.labels)
        if name:
            key = "not_built" if r.output.startswith("not a GoogleTest case") else r.status
            table[name][key] += 1
    return dict(sorted(table.items()))


def race_mutant_executables(tests: dict, race_names: set[str] | None = None) -> dict[str, list[str]]:
    """mutant -> its test executables, for the race mutants: those whose tests carry the label
    "race" (exact), and those named in race_names (mutants.toml says race = true), so that the
    verdict does not depend on the build adding the label."""
    exes: dict[str, set[str]] = defaultdict(set)
    for labels, command in tests.values():
        name = mutant_of(labels)
        if name and (RACE_LABEL in labels or name in (race_names or set())) and command:
            exes[name].add(command[0])
    return {p: sorted(e) for p, e in sorted(exes.items())}


def judge_mutant(counts: dict[str, int], race: bool = False,
                 racecheck: list[SanitizerRun] | None = None, racecheck_note: str = "") -> dict:
    """The verdict on one mutant: killed when one of its tests fails, or (race mutants) when
    racecheck reports a hazard; the same rule as a pitfall (judge_pitfall), plus: a mutant that
    did not build is neither killed nor a survivor ("not built": a problem of the mutant list), and
    one whose tests were all skipped (no GPU, too little memory) is "not run"."""
    v = judge_pitfall(counts, race, racecheck, racecheck_note)
    v["not_built"] = counts.get("not_built", 0)
    v["killed"] = v.pop("caught")
    v["killed_by"] = v.pop("caught_by")
    if v["not_built"] and not (v["passed"] or v["failed"] or v["skipped"]):
        v["state"] = "not built"
        v["killed"] = False
        v["killed_by"] = []
    elif v["killed"]:
        v["state"] = "killed"
    elif v["passed"] == 0 and not v.get("hazards"):
        v["state"] = "not run"
    else:
        v["state"] = "survived"
    return v


def mutation_score(verdicts: dict[str, dict]) -> dict:
    """killed / (killed + survived): mutants not built or not run are listed, not scored."""
    killed = sorted(n for n, v in verdicts.items() if v["state"] == "killed")
    survived = sorted(n for n, v in verdicts.items() if v["state"] == "survived")
    other = sorted(n for n, v in verdicts.items() if v["state"] not in ("killed", "survived"))
    scored = len(killed) + len(survived)
    return {"killed": len(killed), "scored": scored, "share": (len(killed) / scored) if scored else None,
            "survivors": survived, "unscored": {n: verdicts[n]["state"] for n in other}}


def mutant_line(name: str, v: dict) -> str:
    """One line of summary.md, e.g.
    ch05.scan_lookback_int_prefix: killed by tests (12 failed) (tests: 40 passed, 12 failed, 0 skipped)"""
    if v["state"] == "killed":
        how = "killed by " + " and ".join(v["killed_by"])
    else:
        how = v["state"].upper()
    nb = f"; {v['not_built']} not built" if v.get("not_built") else ""
    return f"{name}{' [race]' if v.get('race') else ''}: {how} ({pitfall_evidence(v)}{nb})"


def score_line(score: dict, goal: float = 0.95) -> str:
    if score["share"] is None:
        return "Mutants: none scored"
    met = "goal met" if score["share"] >= goal else f"BELOW the goal of {goal:.0%}"
    return (f"Mutants: {score['killed']} of {score['scored']} killed ({score['share']:.1%}; {met})"
            + (f"; survivors: {', '.join(score['survivors'])}" if score["survivors"] else ""))


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
