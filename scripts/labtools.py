"""Shared helpers of the lab scripts (lab, grade, gpu_suite, report): presets, builds, ctest runs
with labels and JUnit results, exercise and pitfall bookkeeping. Standard library only."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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


def configure_and_build(preset: str, log_file: Path | None = None, jobs: int | None = None) -> None:
    run(["cmake", "--preset", preset], log_file)
    cmd = ["cmake", "--build", "--preset", preset]
    if jobs:
        cmd += ["-j", str(jobs)]
    run(cmd, log_file)


# ---------------------------------------------------------------------------------------------
# ctest with labels

@dataclass
class TestResult:
    name: str
    labels: list[str]
    status: str          # passed | failed | skipped
    output: str = ""

    @property
    def chapter(self) -> str:
        return next((l for l in self.labels if l.startswith("ch") or l == "common"), "?")

    @property
    def exercises(self) -> list[str]:
        return [l[3:] for l in self.labels if l.startswith("ex:")]

    @property
    def pitfall(self) -> str | None:
        return next((l[8:] for l in self.labels if l.startswith("pitfall:")), None)

    @property
    def kind(self) -> str:
        return "gpu" if "gpu" in self.labels else "cpu"


def list_tests(bdir: Path, labels: list[str], with_command: bool = False) -> dict:
    """ctest name -> labels (or -> (labels, command) with_command) of the tests carrying all labels."""
    cmd = ["ctest", "--test-dir", str(bdir), "--show-only=json-v1"]
    for l in labels:
        cmd += ["-L", l]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    tests = {}
    for t in json.loads(out).get("tests", []):
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        labels_ = list(props.get("LABELS", []))
        tests[t["name"]] = (labels_, t.get("command", [])) if with_command else labels_
    return tests


def run_by_executable(bdir: Path, labels: list[str], xml_dir: Path, jobs: int) -> list[TestResult]:
    """Runs each test executable once (all its cases in one process) instead of one process per
    case: much faster on a GPU (one CUDA context per executable). For tracks where only "does at
    least one test fail" matters (starter, pitfalls): a fault that kills the process marks the
    cases it did not report as failed."""
    import concurrent.futures as cf
    tests = list_tests(bdir, labels, with_command=True)
    by_exe: dict[str, dict[str, tuple[str, list[str]]]] = defaultdict(dict)
    for name, (labels_, command) in tests.items():
        if len(command) >= 2 and command[1].startswith("--gtest_filter="):
            by_exe[command[0]][command[1].split("=", 1)[1]] = (name, labels_)
    xml_dir.mkdir(parents=True, exist_ok=True)

    def one(exe: str) -> list[TestResult]:
        xml = xml_dir / (Path(exe).name + ".xml")
        cases = by_exe[exe]
        proc = subprocess.run([exe, f"--gtest_output=xml:{xml}"], capture_output=True, text=True,
                              timeout=900, cwd=Path(exe).parent)
        (xml_dir / (Path(exe).name + ".log")).write_text(proc.stdout + proc.stderr)
        seen: dict[str, str] = {}
        if xml.exists():
            try:
                for case in ET.parse(xml).getroot().iter("testcase"):
                    full = f"{case.get('classname')}.{case.get('name')}"
                    if case.find("failure") is not None:
                        seen[full] = "failed"
                    elif case.get("result") == "skipped" or case.find("skipped") is not None:
                        seen[full] = "skipped"
                    else:
                        seen[full] = "passed"
            except ET.ParseError:
                pass
        out = []
        for full, (name, labels_) in cases.items():
            out.append(TestResult(name, labels_, seen.get(full, "failed"),
                                  "" if full in seen else f"process exited {proc.returncode} before reporting"))
        return out

    results: list[TestResult] = []
    with cf.ThreadPoolExecutor(max_workers=jobs) as pool:
        for r in pool.map(one, list(by_exe)):
            results.extend(r)
    return results


def run_ctest(bdir: Path, labels: list[str], junit: Path, jobs: int, log_file: Path | None = None,
              extra: list[str] | None = None) -> list[TestResult]:
    """Runs the tests carrying all `labels` (AND); returns one result per test."""
    names = list_tests(bdir, labels)
    if not names:
        return []
    junit.parent.mkdir(parents=True, exist_ok=True)
    cmd = ["ctest", "--test-dir", str(bdir), "-j", str(jobs), "--output-junit", str(junit.resolve())]
    for l in labels:
        cmd += ["-L", l]
    cmd += extra or []
    run(cmd, log_file, check=False, quiet=log_file is None)
    results = []
    root = ET.parse(junit).getroot()
    for case in root.iter("testcase"):
        name = case.get("name", "")
        status = case.get("status", "")
        if case.find("skipped") is not None or status in ("notrun", "disabled"):
            st = "skipped"
        elif case.find("failure") is not None or status == "fail":
            st = "failed"
        else:
            st = "passed"
        out = case.findtext("system-out") or ""
        results.append(TestResult(name, names.get(name, []), st, out))
    return results


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


def chapter_titles() -> dict[str, str]:
    titles = {}
    for d in sorted((ROOT / "chapters").glob("[0-9][0-9]_*")):
        titles["ch" + d.name[:2]] = d.name[3:].replace("_", " ")
    return titles


def bench_executables(bdir: Path) -> list[Path]:
    return sorted(p for p in (bdir / "bench").glob("bench_ch*") if p.is_file() and os.access(p, os.X_OK))


def min_time_flag(exe: Path, seconds: float) -> str:
    """--benchmark_min_time in the form this Google Benchmark takes: 1.8+ wants a unit ("0.1s"),
    1.7 only a plain number."""
    probe = subprocess.run([str(exe), f"--benchmark_min_time={seconds}s", "--benchmark_filter=^$"],
                           capture_output=True, text=True)
    return f"--benchmark_min_time={seconds}s" if probe.returncode == 0 else f"--benchmark_min_time={seconds}"


def die(msg: str) -> None:
    print(msg, file=sys.stderr)
    raise SystemExit(1)
