"""cudalab lab driver.

  scripts/lab                  the main job: installs what is missing (or says the one command to
                               run), builds everything, then a per-chapter report for this machine
                               (reference tests, your exercises, key benchmark figures on a GPU).
                               Without a GPU it says so and runs the CPU parts.
  scripts/lab test             build and run every track's tests, one process per test executable;
                               prints a summary per track (with the skipped counts) and the first
                               failures; -v for everything. This is what CI runs (.ci/run, --strict).
  scripts/lab check N.k        one exercise: builds only its test executables, runs exactly its
                               tests, prints the verdict (done / the first failure / not graded:
                               needs X); on a GPU then benchmarks your kernel beside the reference
                               and the vendor library, with the exercise's speed goal.
  scripts/lab hint N.k [level] the exercise's hints, one level at a time (scripts/hint.py)
  scripts/lab results ...      regenerate docs/results and the README result blocks (scripts/results.py)
  scripts/lab handout OUT      instructors: write the student copy (starter track only) to OUT
  scripts/lab deps             check (and, as root or with passwordless sudo, install) the packages
  scripts/lab grade ...        see scripts/grade --help
  scripts/lab gpu-suite OUT    see scripts/gpu_suite --help
  scripts/lab build-dir        print the build directory this machine uses (build/gpu or build/ci)
  scripts/lab new-chapter NN slug   the skeleton of a new chapter (scripts/new_chapter.py)

Options: --preset gpu|ci|debug (default: gpu when nvidia-smi lists a GPU, else ci), -j N,
-v (verbose: build output and every result), --strict (test: CI rules, see docs/instructors.md).

Exit status (every lab script): 0 all is well, 1 something failed (a test, the exercise, the
build), 2 a wrong argument (nothing was done), 3 not graded here (check: every test of the
exercise needs what this machine lacks, e.g. a GPU).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/: labtools, gradelib, ...
import gradelib as gl  # noqa: E402
import labtools as lt  # noqa: E402

PASSTHROUGH = {"grade": "grade", "gpu-suite": "gpu_suite", "hint": "hint.py", "results": "results.py",
               "doctor": "../chapters/12_production/tools/doctor.py",
               "new-chapter": "new_chapter.py", "gpu-card": "../chapters/02_architecture/tools/gpu_card.py"}


class Phases:
    """Wall seconds of each phase, printed as they end and summed up at the end."""

    def __init__(self) -> None:
        self.done: list[tuple[str, float]] = []
        self._name, self._t = "", 0.0

    def start(self, name: str) -> None:
        self._name, self._t = name, time.monotonic()

    def end(self, note: str = "") -> float:
        dt = time.monotonic() - self._t
        self.done.append((self._name, dt))
        lt.log(f"[{dt:6.1f} s] {self._name}" + (f": {note}" if note else ""))
        return dt

    def line(self) -> str:
        return "phases: " + ", ".join(f"{n} {t:.1f} s" for n, t in self.done) + \
            f"; total {sum(t for _, t in self.done):.1f} s"


def handout_mode() -> bool:
    """The student copy (scripts/lab handout): starter track only, no reference to compare with."""
    return (lt.ROOT / ".cudalab-handout").exists()


def cpu_graded() -> set[str]:
    return gl.grading_config().cpu_graded


def jobs_of(args) -> int:
    return args.jobs or os.cpu_count() or 2


def starter_generator() -> list[str] | None:
    for name in ("variants.py", "gen_starter.py"):
        p = lt.ROOT / "scripts" / name
        if p.exists():
            return [sys.executable, str(p), "--check"]
    return None


def show_failures(cases: list, limit: int, verbose: bool) -> None:
    failed = [c for c in cases if c.status == "failed"]
    for c in failed if verbose else failed[:limit]:
        lt.log(f"  FAILED {c.name}")
        for line in gl.first_failure_text(c.output, 40 if verbose else 6).splitlines():
            lt.log(f"      {line}")
    if not verbose and len(failed) > limit:
        lt.log(f"  ... and {len(failed) - limit} more failures (-v lists them all)")


def track_line(name: str, results: list, has_gpu: bool) -> str:
    c = lt.count(results)
    line = f"{name}: {lt.count_line(c)}"
    if c["skipped"]:
        reasons: dict[str, int] = {}
        for r in results:
            if r.status == "skipped":
                n = gl.need_phrase(gl.skip_reason(r.output))
                reasons[n] = reasons.get(n, 0) + 1
        top = sorted(reasons.items(), key=lambda kv: -kv[1])[:3]
        # "1635 need a GPU"; a reason that is not a missing thing reads as it was written
        # ("2: needs 2 GPUs (found 1)", "1: this GPU has fp8 mma")
        line += " (skipped: " + "; ".join(f"{v} need {k}" if k == gl.NO_GPU_NEED else f"{v}: {k}" for k, v in top) + \
            (" ..." if len(reasons) > 3 else "") + ")"
    return line


def verdict_word(ok: bool, results: list, has_gpu: bool) -> str:
    """OK, or on a machine without a GPU what an OK there is worth: the skipped share said."""
    if not ok:
        return "FAILED"
    if has_gpu:
        return "OK"
    c = lt.count(results)
    total = c["passed"] + c["failed"] + c["skipped"]
    return (f"OK on the CPU: {c['skipped']} of {total} tests skipped, nothing on the GPU proven"
            if c["skipped"] else "OK on the CPU")


# ---------------------------------------------------------------------------------------------
# scripts/lab test

def cmd_test(args) -> int:
    ph = Phases()
    preset = args.preset or lt.default_preset()
    has_gpu, why = lt.gpu_visible()
    bdir = lt.build_dir(preset)
    work = bdir / "lab-test"
    lt.log(f"== cudalab test: preset '{preset}' ({'GPU: ' + why if has_gpu else 'no GPU: ' + why})")
    (work / "build.log").unlink(missing_ok=True)
    problems: list[str] = []
    notes: list[str] = []
    handout = handout_mode()

    ph.start("checks")
    untouched = False
    if not handout:
        gen = starter_generator()
        if gen:
            p = subprocess.run(gen, capture_output=True, text=True, cwd=lt.ROOT)
            untouched = p.returncode == 0
            if not untouched:
                msg = "starter/ differs from the starter generated from reference/ (" + \
                    ((p.stderr or p.stdout).strip().splitlines() or ["?"])[0] + ")"
                (problems if args.strict else notes).append(
                    msg + ("" if args.strict else ": your work, or a stale starter; the untouched-starter checks are skipped"))
        u = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", str(lt.ROOT / "scripts"),
                            "-p", "test_*.py"], capture_output=True, text=True, cwd=lt.ROOT)
        tail = (u.stderr.strip().splitlines() or [""])
        if u.returncode != 0:
            problems.append("unit tests of scripts/ failed:\n" + "\n".join(tail[-30:]))
        elif args.verbose:
            lt.log("scripts/ unit tests: " + " ".join(tail[-3:]))
        fmt = lt.format_problems()
        if fmt is None:
            (problems if args.strict else notes).append("clang-format is not installed: the format check did not run")
        elif fmt:
            (problems if args.strict else notes).append(
                f"{len(fmt)} file(s) not formatted as .clang-format says (clang-format -i <file>): " + ", ".join(fmt[:8])
                + (" ..." if len(fmt) > 8 else ""))
        if untouched:
            import regions
            leaks = regions.all_leaks(lt.ROOT)
            for lk in leaks:
                problems.append(f"answer in a starter file: {lk}")
            for e in regions.segmentation_problems(lt.ROOT):
                problems.append(f"scripts/grade --submission could not splice: {e}")
    ph.end(f"{len(problems)} problem(s)")

    ph.start("configure + build")
    lt.configure_and_build(preset, log_file=work / "build.log", jobs=args.jobs, verbose=args.verbose)
    ph.end(f"log: {work / 'build.log'}" if not args.verbose else "")

    tracks: dict[str, list] = {}
    # In the handout the reference label holds only libcudalab's own tests; the starter's
    # failures there are the unfinished exercises, reported, not a failed run.
    main_track = "reference"
    runs = [("reference", ["reference"]), ("starter", ["starter"])]
    if not handout:
        runs.append(("pitfall (CPU tests)", ["pitfall", "cpu"]))
    for track, labels in runs:
        ph.start(f"{track} tests")
        # The starter's large-memory tests (tens of GB each, one at a time) add ~30 s on an H200
        # and tell nothing the regular tests do not: an untouched exercise fails its regular
        # tests. `scripts/lab check N.k` and `scripts/grade` run them. In a handout the starter
        # is the learner's work, so there they run.
        large = not (track == "starter" and not handout)
        res = lt.run_tests(bdir, labels, work / "runs", jobs_of(args), large=large)
        if not large:
            notes.append("the starter's *LargeGpu tests were left out (scripts/lab check N.k and scripts/grade run them)")
        tracks[track] = res
        lt.write_junit(res, work / f"{labels[0]}.xml", f"cudalab.{labels[0]}")
        ph.end(lt.count_line(lt.count(res)))

    ref = tracks[main_track]
    if not handout:
        starter = tracks["starter"]
        cases = lt.to_cases(starter)
        if untouched:
            leaks = gl.untouched_leaks(cases, cpu_graded())
            if leaks:
                problems.append("the untouched starter scores points on " + ", ".join(leaks) +
                                ": its tests pass without the learner's code")
            observed = gl.cpu_graded_observed(cases)
            listed = cpu_graded()
            if observed != listed:
                problems.append("scripts/grading.toml cpu_graded lists " + (", ".join(sorted(listed, key=gl.ex_key)) or "none")
                                + " but the exercises with a CPU test failing on the untouched starter are "
                                + (", ".join(sorted(observed, key=gl.ex_key)) or "none"))
            if has_gpu:
                passing = [v.exercise for v in gl.grade(cases, cpu_graded=listed) if v.failed == 0 and v.ran > 0]
                if passing:
                    problems.append("untouched starter exercises without a failing test: " + ", ".join(passing))

    lt.log("")
    lt.log("== summary" + ("" if has_gpu else " (no GPU: GPU tests are skipped, not passed)"))
    for name, res in tracks.items():
        line = track_line("libcudalab (reference label)" if handout and name == "reference" else name, res, has_gpu)
        if name.startswith("pitfall"):
            caught = [p for p, c in lt.pitfall_table(res).items() if c["failed"]]
            line += f"; pitfalls caught on a CPU: {', '.join(caught) or 'none'} (failures expected there)"
        lt.log(line)
    c = lt.count(ref)
    if c["failed"]:
        lt.log(f"first failures of the {main_track} track:")
        show_failures(ref, 5, args.verbose)
    if args.verbose or handout:
        lt.log("your exercises:" if handout else "starter exercises (each must fail until solved):")
        for v in gl.grade(lt.to_cases(tracks["starter"]), cpu_graded=cpu_graded()):
            lt.log(f"  {v.exercise:>5}  {v.line()}")
    for n in notes:
        lt.log("note: " + n)
    for p in problems:
        lt.log("PROBLEM: " + p)
    ok = c["failed"] == 0 and c["passed"] > 0 and not problems
    lt.log(f"JUnit (one testcase per test): {work}/*.xml")
    lt.log(ph.line())
    lt.log("cudalab test: " + verdict_word(ok, [r for res in tracks.values() for r in res], has_gpu))
    lt.log(f"{main_track}: {lt.count_line(c)}")  # the closing line a CI reads: N passed, N failed, N skipped
    return 0 if ok else 1


# ---------------------------------------------------------------------------------------------
# scripts/lab check N.k

def exercise_targets(bdir: Path, ex: str) -> list[str]:
    tests = lt.list_tests(bdir, ["starter", f"ex:{ex}"], with_command=True)
    return sorted({Path(cmd[0]).name for _, cmd in tests.values() if cmd})


def run_bench_rounds(exes: dict[str, Path], goals: list[gl.Goal], rounds: int, work: Path) -> dict[str, list[dict]]:
    """Runs each track's bench executable `rounds` times, interleaved (learner, reference,
    learner, ...), on the rows of the goals and their vendor rows only."""
    import json
    rx = gl.bench_filter(goals)
    out: dict[str, list[dict]] = {t: [] for t in exes}
    flag = lt.min_time_flag(next(iter(exes.values())), 0.2)
    for i in range(rounds):
        for track, exe in exes.items():
            j = work / f"{track}_{i}.json"
            lt.run([str(exe), f"--benchmark_filter={rx}", f"--benchmark_out={j}", "--benchmark_out_format=json", flag],
                   work / "bench.log", check=False, quiet=True)
            if j.exists():
                try:
                    out[track].append(json.loads(j.read_text()))
                except ValueError:
                    pass
    return out


def show_resources(preset: str, bdir: Path, ex: str, ch: str, work: Path, args) -> None:
    """Registers, spills, shared memory and occupancy of the exercise's kernels, the learner's
    beside the reference's (scripts/resources.py; read from the objects, no GPU needed)."""
    import resources
    cdir = next(iter(sorted((lt.ROOT / "chapters").glob(f"{ch[2:]}_*"))), lt.ROOT / "chapters")
    if not handout_mode() and resources.cuobjdump_path() and resources.exercise_selection(cdir, ex):
        lt.configure_and_build(preset, log_file=work / "build.log", targets=[f"{ch}_reference"], configure=False,
                               jobs=args.jobs, verbose=args.verbose)
    lt.log("")
    for line in resources.report_lines(lt.ROOT, bdir, ex, cdir, ch, handout_mode()):
        lt.log(line)


def cmd_check(args) -> int:
    if len(args.args) != 1:
        lt.usage_error("usage: scripts/lab check N.k   (e.g. scripts/lab check 5.4)")
    ex = lt.parse_exercise(args.args[0])
    lt.check_seed_env()
    compile_errors = json.loads(Path(args.compile_errors).read_text()) if args.compile_errors else {}
    ph = Phases()
    lt.ensure_deps()
    preset = args.preset or lt.default_preset()
    has_gpu, why = lt.gpu_visible()
    bdir = lt.build_dir(preset)
    work = bdir / "lab-check" / ex
    ch = gl.exercise_chapter(ex)
    (work / "build.log").unlink(missing_ok=True)
    lt.log(f"== exercise {ex} ({ch}), preset '{preset}', " + (f"GPU: {why}" if has_gpu else f"no GPU ({why})"))

    ph.start("find its tests")
    if not (bdir / "CMakeCache.txt").exists():
        lt.configure_and_build(preset, log_file=work / "build.log", targets=["cudalab"], verbose=args.verbose)
    targets = exercise_targets(bdir, ex)
    if not targets:  # a chapter or test added since the last configure: configure once more
        lt.configure_and_build(preset, log_file=work / "build.log", targets=["cudalab"], verbose=args.verbose)
        targets = exercise_targets(bdir, ex)
    if not targets:
        lt.usage_error(f"no test carries the label ex:{ex}: {ex} is not an exercise of this tree (`ctest --test-dir "
                       f"{bdir} --print-labels` lists them)")
    ph.end(", ".join(targets))

    ph.start("build")
    try:
        lt.configure_and_build(preset, log_file=work / "build.log", targets=targets, configure=False,
                               jobs=args.jobs, verbose=args.verbose, keep_going=True)
    except lt.BuildError as e:
        # A file of the chapter that does not compile must not stop this exercise: it is built in
        # its untouched version, in a copy of the tree, and the check runs there.
        fb = None if compile_errors else lt.compile_fallback(e, f"check {ex}")
        if fb is None:
            raise
        tree, report = fb
        own = [r for r in report.values() if ex in r["exercises"]]
        if own:  # its own file does not compile: nothing to run, say it now
            ph.end("does not compile")
            lt.log("")
            lt.log(f"{ex}: does not compile. First error:")
            for r in own:
                lt.log(f"  {r['error']}")
            lt.log(f"(the whole build log: {work / 'build.log'}; fix it, then rerun scripts/lab check {ex})")
            return lt.EXIT_FAILED
        errs = work / "compile_errors.json"
        errs.parent.mkdir(parents=True, exist_ok=True)
        errs.write_text(json.dumps(report, indent=2) + "\n")
        cmd = [sys.executable, str(tree / "scripts" / "lab"), "check", ex, "--compile-errors", str(errs),
               "--rounds", str(args.rounds)] + (["--preset", args.preset] if args.preset else []) + \
            (["-j", str(args.jobs)] if args.jobs else []) + (["-v"] if args.verbose else []) + \
            (["--no-bench"] if args.no_bench else [])
        ph.end(f"{len(report)} file(s) did not compile; checking in {tree}")
        return subprocess.call(cmd, cwd=tree)
    ph.end()
    mine = {rel: r for rel, r in compile_errors.items() if ex in r.get("exercises", [])}
    for rel, r in compile_errors.items():
        if rel not in mine:
            lt.log(f"note: {rel} does not compile ({r['error']}); its untouched version was built so that {ex} could be checked")
    if mine:
        lt.log("")
        lt.log(f"{ex}: does not compile. First error:")
        for rel, r in mine.items():
            lt.log(f"  {r['error']}")
        lt.log(f"(fix it, then rerun scripts/lab check {ex})")
        return lt.EXIT_FAILED

    ph.start("tests")
    res = lt.run_tests(bdir, ["starter", f"ex:{ex}"], work / "runs", jobs_of(args))
    lt.write_junit(res, work / "tests.xml", f"cudalab.check.{ex}")
    v = gl.judge(ex, lt.to_cases(res), cpu_graded=cpu_graded())
    ph.end(lt.count_line(lt.count(res)))

    lt.log("")
    if v.state == "done":
        lt.log(f"{ex}: done — {v.passed} tests passed" + (f"; {v.skipped} skipped (needs " + "; ".join(v.needs) + ")"
                                                       if v.skipped else ""))
    elif v.state == "failing":
        lt.log(f"{ex}: {v.failed} of {v.ran} tests fail" + (f" ({v.skipped} skipped)" if v.skipped else "")
               + ". First failure:")
        for line in v.first_failure.splitlines():
            lt.log("  " + line)
        if args.verbose:
            for n in v.failing[1:]:
                lt.log(f"  also failed: {n}")
        first = v.failing[0] if v.failing else ""
        cmd = lt.list_tests(bdir, ["starter", f"ex:{ex}"], with_command=True).get(first, ([], []))[1]
        if cmd:
            lt.log(f"rerun it: {' '.join(cmd)}")
        lt.log(f"(all results: {work / 'tests.xml'}; -v lists every failing test)")
    else:
        lt.log(f"{ex}: not graded here: needs " + "; ".join(v.needs))
        lt.log(f"  (all {v.skipped} of its tests were skipped)" if v.ran == 0 else
               f"  ({v.skipped} of its tests were skipped; the {v.ran} that ran, {v.passed} passed, do not read your code)")

    show_resources(preset, bdir, ex, ch, work, args)
    goals = gl.goals_of(ex, lt.ROOT / "bench")
    if goals and has_gpu and not args.no_bench and v.state == "failing":
        # A wrong kernel's row is an error row: timing only the reference and the vendor here cost
        # over a minute of every failing check on the H200 (5.4) and told nothing new.
        lt.log(f"speed goal: {goals[0].label}" + (f" >= {goals[0].goal:.2f}x" if goals[0].goal else "")
               + " (benchmarked once its tests pass; the reference's ratio: docs/instructors.md)")
    elif goals and has_gpu and not args.no_bench:
        ph.start("benchmarks")
        names = {"learner": f"bench_{ch}_starter"} | ({} if handout_mode() else {"reference": f"bench_{ch}"})
        lt.configure_and_build(preset, log_file=work / "build.log", targets=list(names.values()),
                               configure=False, jobs=args.jobs, verbose=args.verbose)
        exes = {t: bdir / "bench" / n for t, n in names.items()}
        runs = run_bench_rounds(exes, goals, args.rounds, work)
        ph.end(f"{args.rounds} interleaved rounds per track")
        lt.log("")
        lt.log(f"speed of {ex} (median of {args.rounds} runs per track; each process also runs the vendor row):")
        for g in goals:
            sv = gl.speed_verdict(g, runs.get("learner", []), runs.get("reference", []))
            for line in sv.lines():
                lt.log("  " + line)
        if v.state != "done":
            lt.log("  (its tests did not run here: the speed of a kernel that nothing checked)")
    elif goals and not has_gpu:
        lt.log(f"speed goal: {goals[0].label}" + (f" >= {goals[0].goal:.2f}x" if goals[0].goal else "")
               + " (measured on a GPU only)")
    lt.log(ph.line())
    return 0 if v.state == "done" else lt.EXIT_FAILED if v.state == "failing" else lt.EXIT_NOT_GRADED


# ---------------------------------------------------------------------------------------------
# scripts/lab (the report)

def key_figures(bdir: Path, tmp: Path) -> dict[str, list[str]]:
    """Each chapter's headline ratios (bench/chNN/chNN.toml, headline = true): its reference benchmark
    runs only those rows and their vendor rows (the full tables are the GPU suite's job; running
    every row would triple the time of `scripts/lab` on a fresh clone). A first short pass warms the
    GPU (clocks, caches, lazy module loading) and is thrown away; the figures are the median of
    KEY_REPETITIONS repetitions of the second pass, as the published ratios are read, and are
    labelled indicative: one run of a fresh clone is not the suite's five."""
    import json
    from types import SimpleNamespace
    try:
        import report  # noqa: E402
    except ImportError:
        return {}
    lines: dict[str, list[str]] = {}
    for exe in lt.bench_executables(bdir):
        ch = exe.name.removeprefix("bench_")
        if ch.endswith("_starter"):
            continue
        try:
            heads = [r for r in report.load_declarations(ch)["ratio"] if r.get("headline")]
        except ValueError as e:  # a malformed bench/chNN/chNN.toml: say so, do not stop the report
            lines[ch] = [f"(key figures unavailable: {e})"]
            continue
        if not heads:
            continue
        rx = gl.bench_filter([SimpleNamespace(row=r["row"], vendor=r["vendor"]) for r in heads])
        out = tmp / f"{ch}.json"
        lt.run([str(exe), f"--benchmark_filter={rx}", lt.min_time_flag(exe, 0.02)], tmp / "bench.log",
               check=False, quiet=True)  # the warm-up pass, not read
        lt.run([str(exe), f"--benchmark_filter={rx}", f"--benchmark_out={out}", "--benchmark_out_format=json",
                f"--benchmark_repetitions={KEY_REPETITIONS}", lt.min_time_flag(exe, 0.05)], tmp / "bench.log",
               check=False, quiet=True)
        try:
            data = json.loads(out.read_text())
        except (OSError, ValueError):  # no row for this machine (ch08's 2-GPU rows on one GPU), or a crash
            lines[ch] = [f"(no headline row ran on this machine: {tmp / 'bench.log'})"]
            continue
        lines[ch] = [f"{r['label']}: {r['text']} (indicative: {KEY_REPETITIONS} short repetitions after a warm-up; "
                     "the measured tables: docs/results/)" for r in (report.ratio_result(d, data) for d in heads)]
    return lines


KEY_REPETITIONS = 3


def cmd_report(args) -> int:
    ph = Phases()
    ph.start("dependencies")
    lt.ensure_deps()
    ph.end()
    preset = args.preset or lt.default_preset()
    has_gpu, why = lt.gpu_visible()
    bdir = lt.build_dir(preset)
    work = bdir / "lab-report"
    (work / "build.log").unlink(missing_ok=True)
    lt.log(f"== cudalab: preset '{preset}'; " + (f"GPU: {why}" if has_gpu else
           f"no GPU ({why}): GPU tests are skipped and benchmarks cannot run; the CPU parts run"))
    ph.start("configure + build")
    lt.configure_and_build(preset, log_file=work / "build.log", jobs=args.jobs, verbose=args.verbose)
    ph.end(f"log: {work / 'build.log'}" if not args.verbose else "")
    handout = handout_mode()
    ph.start("tests")
    ref = [] if handout else lt.run_tests(bdir, ["reference"], work / "runs", jobs_of(args))
    # As in `scripts/lab test`: the starter's *LargeGpu tests are left to `scripts/lab check N.k`
    # and `scripts/grade`, except in a handout, where the starter is the learner's work.
    starter = lt.run_tests(bdir, ["starter"], work / "runs", jobs_of(args), large=handout)
    ph.end()
    figures = {}
    if has_gpu and not args.no_bench and not handout:
        ph.start("benchmarks")
        figures = key_figures(bdir, work)
        ph.end()
    titles = lt.chapter_titles()
    verdicts = gl.grade(lt.to_cases(starter), cpu_graded=cpu_graded())
    lt.log("")
    lt.log(f"cudalab report — {why if has_gpu else 'no GPU on this machine'}")
    for ch in ["common"] + sorted(titles):
        r = [t for t in ref if t.chapter == ch]
        mine = [v for v in verdicts if v.chapter == ch]
        if not r and not mine:
            continue
        lt.log(f"\n{ch}  {titles.get(ch, 'libcudalab')}")
        if r:
            lt.log("  " + track_line("reference", r, has_gpu) + ("   <-- FAILURES" if lt.count(r)["failed"] else ""))
            for t in [t for t in r if t.status == "failed"][:5]:
                lt.log(f"    failed: {t.name}")
        if mine:
            done = sum(v.state == "done" for v in mine)
            graded = sum(v.graded for v in mine)
            lt.log(f"  your exercises: {done} of {len(mine)} done"
                   + ("" if graded == len(mine) else f" ({len(mine) - graded} not graded here)"))
            for v in mine:
                lt.log(f"    {v.exercise:>5}  {v.line()}")
        for line in figures.get(ch, []):
            lt.log(f"  bench: {line}")
    total = lt.count(ref)
    lt.log("")
    if ref:
        lt.log(track_line("reference", ref, has_gpu))
    lt.log(track_line("starter (yours)", starter, has_gpu))
    lt.log("next: `scripts/lab check N.k` for one exercise; `scripts/lab hint N.k` for a hint")
    lt.log(ph.line())
    ok = total["failed"] == 0
    lt.log("cudalab: " + verdict_word(ok, ref or starter, has_gpu) + ("" if ref else " (your exercises: above)"))
    return 0 if ok else 1


# ---------------------------------------------------------------------------------------------
# small commands

def cmd_handout(args) -> int:
    if len(args.args) != 1:
        lt.usage_error("usage: scripts/lab handout OUT_DIR")
    if not (lt.ROOT / "scripts" / "handout.py").exists():
        lt.usage_error("scripts/lab handout: an instructor's command; this copy is a handout already")
    import handout
    return handout.main(Path(args.args[0]))


def cmd_deps(args) -> int:
    missing = lt.missing_deps()
    if not missing:
        lt.log("every package of scripts/deps.txt is here")
    lt.ensure_deps(install=True)
    return 0


def main() -> int:
    argv = sys.argv[1:]
    if argv and argv[0] in PASSTHROUGH:
        script = lt.ROOT / "scripts" / PASSTHROUGH[argv[0]]
        if not script.exists():
            lt.usage_error(f"scripts/lab {argv[0]}: {script.relative_to(lt.ROOT)} is not in this tree "
                           "(an instructor's tool: the handout has none)")
        os.execv(sys.executable, [sys.executable, str(script), *argv[1:]])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", nargs="?", default="report",
                    choices=["report", "test", "check", "handout", "deps", "build-dir", *PASSTHROUGH])
    ap.add_argument("args", nargs="*")
    ap.add_argument("--preset", choices=["gpu", "ci", "debug"])
    ap.add_argument("-j", "--jobs", type=int)
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--strict", action="store_true", help="test: CI rules (starter untouched, no answer in it)")
    ap.add_argument("--no-bench", action="store_true", help="report, check: skip the benchmarks")
    ap.add_argument("--rounds", type=int, default=3, help="check: benchmark runs per track (interleaved)")
    ap.add_argument("--compile-errors", help=argparse.SUPPRESS)  # check: from the tree whose build failed
    args = ap.parse_intermixed_args(argv)
    if args.jobs is not None and args.jobs < 1:
        lt.usage_error(f"-j {args.jobs}: at least 1")
    if args.rounds < 1:
        lt.usage_error(f"--rounds {args.rounds}: at least 1")
    if args.command in ("report", "test", "build-dir") and args.args:
        lt.usage_error(f"scripts/lab {args.command} takes no argument (got {' '.join(args.args)})")
    if args.command in ("report", "test"):
        lt.check_seed_env()
    if args.command == "build-dir":
        print(lt.build_dir(args.preset or lt.default_preset()))
        return 0
    if args.command == "test":
        lt.ensure_deps()
        return cmd_test(args)
    return {"check": cmd_check, "handout": cmd_handout, "deps": cmd_deps}.get(args.command, cmd_report)(args)


if __name__ == "__main__":
    sys.exit(main())
