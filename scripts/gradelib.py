"""The grading rules of cudalab, as plain functions over test results (scripts/grade, scripts/lab
check and scripts/lab report use them; scripts/test_gradelib.py feeds them synthetic results).

The rules (docs/instructors.md argues them):

* All or nothing per exercise. An exercise earns its points when every one of its tests that ran
  passed, and nothing when one failed. An untouched starter fails at least one test of every
  exercise (CI checks it for the CPU tests, the GPU suite for the GPU tests), so it scores 0.
* Exact labels. An exercise's tests are those labelled exactly `ex:N.k` (never a regex match:
  `ex:5.1` does not select 5.10); a chapter is exactly `chNN` (`--chapter 3` is ch03 only).
* Skips. A test skipped for a missing capability (compute capability, memory, cuDNN, an
  architecture outside a table) does not zero a finished exercise: it is graded on the tests that
  ran, and the report names what was missing. An exercise is graded only when a test that reads
  the learner's code ran: one of its GPU tests, or, for the exercises listed as `cpu_graded` in
  scripts/grading.toml (CI checks that list: each has a CPU test that fails on the untouched
  starter), one of its CPU tests. Otherwise it is "not graded: needs <what was missing>".
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


# What a test's ctest labels say: the one reading, shared by the grading rules (Case) and the
# scripts that run tests (labtools.TestResult).
GRADING_TOML = Path(__file__).resolve().parent / "grading.toml"


@dataclass
class GradingConfig:
    """scripts/grading.toml, read in one place for scripts/lab and scripts/grade: the points of each
    exercise (`default` where none is listed), the points of each speed goal, and the exercises
    graded on their CPU tests alone."""
    default: float = 1.0
    points: dict[str, float] = field(default_factory=dict)
    speed: dict[str, float] = field(default_factory=dict)
    cpu_graded: set[str] = field(default_factory=set)


def grading_config(path: Path = GRADING_TOML) -> GradingConfig:
    cfg = tomllib.loads(Path(path).read_text())
    return GradingConfig(default=float(cfg.get("default", 1)),
                         points={str(k): float(v) for k, v in cfg.get("points", {}).items()},
                         speed={str(k): float(v) for k, v in cfg.get("speed", {}).items()},
                         cpu_graded={norm_exercise(str(e)) for e in cfg.get("cpu_graded", [])})


def kind_of(labels: list[str]) -> str:
    """'gpu' for a test labelled gpu, else 'cpu'."""
    return "gpu" if "gpu" in labels else "cpu"


def exercises_in(labels: list[str]) -> list[str]:
    """The exercise ids of the ex:N.k labels."""
    return [l[3:] for l in labels if l.startswith("ex:")]


def chapter_of(labels: list[str]) -> str:
    """The chapter label (chNN, or common for libcudalab), '?' when there is none."""
    return next((l for l in labels if re.fullmatch(r"ch\d\d", l) or l == "common"), "?")


@dataclass
class Case:
    """One test case's result, as the grading rules see it."""
    name: str
    labels: list[str]
    status: str              # passed | failed | skipped
    message: str = ""        # the failure text, or the skip message

    @property
    def kind(self) -> str:
        return kind_of(self.labels)

    @property
    def exercises(self) -> list[str]:
        return exercises_in(self.labels)

    @property
    def chapter(self) -> str:
        return chapter_of(self.labels)


# ---------------------------------------------------------------------------------------------
# names

def norm_chapter(s: str) -> str:
    """'3', '03', 'ch3', 'ch03', '03_first_kernels' -> 'ch03' (exact chapter label)."""
    m = re.fullmatch(r"(?:ch)?0*(\d{1,2})(?:_\w+)?", s.strip())
    if not m:
        raise ValueError(f"not a chapter: {s!r} (give e.g. 3, 03 or ch03)")
    return f"ch{int(m.group(1)):02d}"


def norm_exercise(s: str) -> str:
    """'5.1', '05.1', 'ex:5.1' -> '5.1'."""
    m = re.fullmatch(r"(?:ex:)?0*(\d+)\.(\d+)", s.strip())
    if not m:
        raise ValueError(f"not an exercise id: {s!r} (give N.k, e.g. 5.4)")
    return f"{int(m.group(1))}.{int(m.group(2))}"


def exercise_chapter(ex: str) -> str:
    return f"ch{int(ex.split('.')[0]):02d}"


def ex_key(ex: str) -> list[int]:
    return [int(x) for x in ex.split(".")]


def select(cases: list[Case], exercise: str | None = None, chapter: str | None = None) -> list[Case]:
    """The cases labelled exactly ex:<exercise> and/or exactly <chapter>."""
    out = cases
    if exercise is not None:
        out = [c for c in out if f"ex:{exercise}" in c.labels]
    if chapter is not None:
        out = [c for c in out if chapter in c.labels]
    return out


# ---------------------------------------------------------------------------------------------
# skip and failure messages

def skip_reason(message: str) -> str:
    """The reason of a skip message: the text after the first 'skipped: ' (GoogleTest prefixes
    file:line), on one line."""
    m = re.search(r"skipped: ?(.*)", message or "")
    reason = m.group(1) if m else (message or "").strip()
    reason = reason.strip().splitlines()[0] if reason.strip() else ""
    return reason or "skipped without a reason"


def is_no_gpu(reason: str) -> bool:
    return reason.startswith("no GPU") or "no nvidia" in reason.lower()


NO_GPU_NEED = "a GPU"


def need_phrase(reason: str) -> str:
    """A skip reason as what is missing: NO_GPU_NEED for every form of no-GPU, else the reason."""
    return NO_GPU_NEED if is_no_gpu(reason) else reason


def first_failure_text(message: str, max_lines: int = 8) -> str:
    """The GoogleTest failure text, short: its first lines without blank ones."""
    lines = []
    for l in (message or "").splitlines():
        if not l.strip() or l.strip() == "unknown file":
            continue
        m = re.fullmatch(r"\s*(\S*/)?([^/\s]+:\d+)\s*", l)  # /long/path/test_x.cpp:42 -> test_x.cpp:42
        lines.append(m.group(2) if m else l.rstrip())
    out = lines[:max_lines]
    if len(lines) > max_lines:
        out.append(f"... ({len(lines) - max_lines} more lines)")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# the verdict of one exercise

@dataclass
class Verdict:
    exercise: str
    chapter: str
    points: float
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    graded: bool = False
    score: float = 0.0
    state: str = ""                                    # done | failing | not graded
    needs: list[str] = field(default_factory=list)     # what the skipped tests needed
    failing: list[str] = field(default_factory=list)   # names of the failed tests
    first_failure: str = ""                            # the first failed test's message

    @property
    def ran(self) -> int:
        return self.passed + self.failed

    def line(self) -> str:
        """One line of a report: the verdict and its evidence."""
        if self.state == "done":
            s = f"done ({self.passed} tests passed"
            if self.skipped:
                s += f"; {self.skipped} skipped, needs " + "; ".join(self.needs)
            return s + ")"
        if self.state == "failing":
            return f"failing: {self.failed} of {self.ran} tests fail" + \
                (f" ({self.skipped} skipped)" if self.skipped else "")
        return "not graded: needs " + ("; ".join(self.needs) or "tests that run here")

    def as_dict(self) -> dict:
        return {"exercise": self.exercise, "chapter": self.chapter, "points": self.points,
                "score": round(self.score, 2), "state": self.state, "graded": self.graded,
                "passed": self.passed, "failed": self.failed, "skipped": self.skipped,
                "needs": self.needs, "failing_tests": self.failing, "first_failure": self.first_failure}


def judge(exercise: str, cases: list[Case], points: float = 1.0,
          cpu_graded: set[str] | frozenset[str] = frozenset()) -> Verdict:
    """The verdict of one exercise from the results of its tests (selected by exact label)."""
    mine = select(cases, exercise=exercise)
    v = Verdict(exercise, exercise_chapter(exercise), points)
    needs: list[str] = []
    for c in mine:
        if c.status == PASSED:
            v.passed += 1
        elif c.status == FAILED:
            v.failed += 1
            v.failing.append(c.name)
            if not v.first_failure:
                v.first_failure = f"{c.name}\n{first_failure_text(c.message)}".rstrip()
        else:
            v.skipped += 1
            n = need_phrase(skip_reason(c.message))
            if n not in needs:
                needs.append(n)
    v.needs = needs
    gpu_ran = any(c.kind == "gpu" and c.status in (PASSED, FAILED) for c in mine)
    cpu_ran = any(c.kind == "cpu" and c.status in (PASSED, FAILED) for c in mine)
    if v.failed:
        v.graded, v.state, v.score = True, "failing", 0.0
    elif gpu_ran or (exercise in cpu_graded and cpu_ran):
        v.graded, v.state, v.score = True, "done", points
    else:
        v.graded, v.state, v.score = False, "not graded", 0.0
        if not mine:
            v.needs = ["tests: none carries the label ex:" + exercise]
        elif not needs:
            v.needs = [NO_GPU_NEED]  # only CPU tests ran, and they do not read this exercise's code
    return v


def exercises_of(cases: list[Case]) -> list[str]:
    return sorted({ex for c in cases for ex in c.exercises}, key=ex_key)


def grade(cases: list[Case], points: dict[str, float] | None = None, default_points: float = 1.0,
          cpu_graded: set[str] | frozenset[str] = frozenset(), chapter: str | None = None) -> list[Verdict]:
    """Every exercise of `cases` (or of one chapter, exactly), judged."""
    points = points or {}
    exs = [e for e in exercises_of(cases) if chapter is None or exercise_chapter(e) == chapter]
    return [judge(e, cases, points.get(e, default_points), cpu_graded) for e in exs]


def totals(verdicts: list[Verdict]) -> dict[str, float]:
    possible = sum(v.points for v in verdicts)
    graded = sum(v.points for v in verdicts if v.graded)
    return {"score": round(sum(v.score for v in verdicts), 2), "graded_points": graded,
            "possible_points": possible, "not_graded_points": possible - graded}


def cpu_graded_observed(untouched_starter: list[Case]) -> set[str]:
    """The exercises whose CPU tests read the learner's code: a CPU test fails on the untouched
    starter. CI compares this with grading.toml's cpu_graded list."""
    return {ex for c in untouched_starter if c.kind == "cpu" and c.status == FAILED for ex in c.exercises}


def untouched_leaks(untouched_starter: list[Case], cpu_graded: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """Exercises that an untouched starter would score points on (must be empty)."""
    return [v.exercise for v in grade(untouched_starter, cpu_graded=cpu_graded) if v.score > 0]


# ---------------------------------------------------------------------------------------------
# speed goals (bench/chNN/chNN.toml [[ratio]] entries with `exercise` and `goal`)

@dataclass
class Goal:
    exercise: str
    chapter: str
    label: str
    row: str
    vendor: str
    metric: str
    goal: float | None
    decl: dict = field(default_factory=dict)  # the [[ratio]] entry itself (report.ratio_result reads it)


def goals_from_toml(chapter: str, data: dict) -> list[Goal]:
    out = []
    for r in data.get("ratio", []):
        if "exercise" not in r:
            continue
        out.append(Goal(norm_exercise(str(r["exercise"])), chapter, r.get("label", ""), r["row"], r["vendor"],
                        r.get("metric", "GB/s"), float(r["goal"]) if "goal" in r else None, dict(r)))
    return out


def goals_of(exercise: str, bench_dir: Path) -> list[Goal]:
    """The speed goals of one exercise, from bench_dir/chNN/chNN.toml (none when the file is absent)."""
    import report  # scripts/report.py: the one owner of the declarations' path
    f = report.declarations_path(exercise_chapter(exercise), bench_dir)
    if not f.exists():
        return []
    return [g for g in goals_from_toml(exercise_chapter(exercise), tomllib.loads(f.read_text()))
            if g.exercise == exercise]


def ratio_to_vendor(data: dict, goal: Goal) -> tuple[float, str, str] | None:
    """(row / vendor row, row name, vendor name) in one process's JSON, or None. The same rule as
    the published ratios (scripts/report.py ratio_result): the interleaved vs_base counter of the
    row when it has one, else the vendor row of the same repetition; the median over repetitions."""
    import report  # scripts/report.py: one definition of how a ratio is read
    decl = goal.decl or {"label": goal.label, "row": goal.row, "vendor": goal.vendor, "metric": goal.metric}
    r = report.ratio_result(decl, data)
    if r["ratio"] is None:
        return None
    return r["ratio"], r["row"], r["vendor"]


@dataclass
class SpeedVerdict:
    exercise: str
    label: str
    learner: float | None       # learner / vendor (median over the runs)
    reference: float | None     # reference / vendor (median over the runs)
    goal: float | None

    @property
    def learner_over_reference(self) -> float | None:
        """A ratio of ratios: the two tracks cannot share a process (same API symbols), so each is
        measured against the vendor row of its own process."""
        if self.learner is None or not self.reference:
            return None
        return self.learner / self.reference

    @property
    def met(self) -> bool | None:
        if self.goal is None or self.learner is None:
            return None
        return self.learner >= self.goal

    def lines(self) -> list[str]:
        f = (lambda x: "n/a" if x is None else f"{x:.2f}x")
        out = [f"{self.label}",
               f"  learner / vendor   {f(self.learner)}",
               f"  reference / vendor {f(self.reference)}",
               f"  learner / reference {f(self.learner_over_reference)}  (ratio of the two ratios above: "
               "each track runs in its own process, against the vendor row of that process)"]
        if self.goal is not None:
            met = self.met
            out.append(f"  goal: learner / vendor >= {self.goal:.2f}x: "
                       + ("met" if met else "not met" if met is not None else "not measured"))
        return out


def speed_verdict(goal: Goal, learner_runs: list[dict], reference_runs: list[dict]) -> SpeedVerdict:
    def med(runs):
        xs = [r[0] for r in (ratio_to_vendor(d, goal) for d in runs) if r]
        import report  # one median, report.py's (None when nothing was measured)
        return report.median(xs)
    return SpeedVerdict(goal.exercise, goal.label, med(learner_runs), med(reference_runs), goal.goal)


def _posix_row(rx: str) -> str | None:
    """A row regex as Google Benchmark's --benchmark_filter can read it (POSIX extended, matched
    against the full instance name, which may end in /manual_time), or None when it uses Python-only
    syntax. The trailing $ is dropped for that suffix; the exact rows are picked from the JSON."""
    r = rx.replace("\\d", "[0-9]")
    if "\\" in r or "(?" in r:
        return None
    return r[:-1] if r.endswith("$") else r


def bench_filter(goals: list[Goal]) -> str:
    """A --benchmark_filter that selects the goals' rows and vendor rows, as narrowly as Google
    Benchmark's regex allows: the rows themselves when their regexes are plain (each benchmark
    process pays its setup and one output check per row, so every extra row costs seconds), else
    their families (the literal start of each regex). The exact rows are then picked from the JSON
    with Python's re."""
    pats = []
    for g in goals:
        for rx in (g.row, g.vendor):
            p = _posix_row(rx)
            if p is None:
                m = re.match(r"\^?([A-Za-z0-9_]+)", rx)
                p = "^" + m.group(1) if m else ""
            if p and p not in pats:
                pats.append(p)
    return "|".join(f"({p})" for p in pats) if pats else "."