"""Running the tests: ctest's labels, one process per test executable with GoogleTest's XML, crashes
and hangs each charged to their case, and the per-exercise and per-pitfall tables of the results."""
from __future__ import annotations

import json
import os
import re
import subprocess
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from .core import RACE_LABEL
import gradelib  # noqa: E402  (scripts/, on sys.path through cudalab.core)


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
