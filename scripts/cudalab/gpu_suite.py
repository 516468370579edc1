"""The GPU suite: the evidence that GPU code works. Run it on a machine with a GPU, in one call:

    scripts/gpu_suite OUT_DIR [--preset gpu] [--skip-bench] [--skip-sanitizer] [--skip-mutants]
                      [--sanitizer-tools memcheck,racecheck,synccheck,initcheck] [--bench-filter REGEX]
                      [--bench-only]

Split over two calls where one would outlast a time limit: `--skip-bench`, then `--bench-only`.

1. builds with the native architecture (preset gpu);
2. reference track: every test must pass (none may fail; skips are listed);
3. starter track: every exercise must still fail (its tests have teeth);
4. pitfalls: every pitfall must be caught: at least one of its exercise's tests fails, or, for a
   pitfall declared RACE (`// BEGIN PITFALL name EXERCISES N.k RACE`: its bug is a shared-memory
   race, ctest label "race"), compute-sanitizer racecheck reports a hazard in its exercise's GPU tests. A race makes
   a test fail only on some runs; racecheck finds it on every run, so the verdict does not depend
   on luck. summary.md/json say how each pitfall was caught: "tests (n failed)", "racecheck
   (n hazards)", or both;
4b. mutants (chapters/*/mutants.toml, built with -DCUDALAB_MUTANTS=ON in the same build dir,
   which is configured back to what it had afterwards: OFF unless it was configured with them): each mutant's exercise tests run (one process per
   executable, *FaultGpu suites left out); a mutant is killed when a test fails, or, for race =
   true (a removed barrier), when racecheck reports a hazard. summary.md/json give the share
   killed and list the survivors; below 95% (or a mutant that does not build) is a problem;
5. compute-sanitizer over the reference GPU tests, which must be clean: memcheck and racecheck on
   every executable, synccheck and initcheck on the executables named in TOOL_EXES (kernels with
   barriers, shared memory or workspaces; the tools are slow, and the 10-minute budget of the
   suite does not allow all four everywhere). Suites named *LargeGpu (too slow there) and
   *FaultGpu (CUDA errors on purpose) are left out, and per tool the suites of TOOL_SKIP_SUITES
   (memcheck: NCCL's own calls); the race pitfalls' and race mutants' racecheck runs use the same
   filter;
6. benchmarks to JSON (--bench-repetitions, default 5: the key ratios of bench/chNN/chNN.toml are the
   median of the repetitions with their spread), then scripts/report.py: Markdown tables, key
   ratios, plots. The JSON is also copied to OUT_DIR/bench/bench_chNN.json: commit it and
   regenerate docs/results and the README result blocks with
       scripts/results.py --import OUT_DIR/bench
   (copies it to docs/results/raw/<GPU>/, then rewrites; see docs/results/README.md);
7. OUT_DIR/summary.md (printed last), summary.json, report.md, artifacts.tar.gz (logs, JUnit XML,
   benchmark JSON, plots, program outputs).
Exit status 0 only when 2-5 hold.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/: labtools, gradelib, ...
import labtools as lt  # noqa: E402
import report  # noqa: E402

SANITIZER_FILTER = "*Gpu.*-*LargeGpu.*:*FaultGpu.*"
# Every tool runs on the executables whose name matches its pattern. memcheck and racecheck: all.
# synccheck (barriers in divergent code, bad __syncwarp masks): the kernels with barriers or
# warp-synchronous code. initcheck (reads of global memory nothing wrote: workspaces, staging
# buffers, tile states): chapters 4 and 5, whose APIs take workspaces and staging buffers; the
# chapter 6 GEMMs read only what the tests upload, and they are the slowest under a sanitizer.
SYNC_EXES = r"^reference_ch0[4-6]_test_(transpose|bank_conflicts|reduce|scan_block|scan|stencil|histogram|occupancy|sgemm|conv|wmma|wgmma|fused)$"
#
# racecheck leaves out reference_ch11_test_lt_gemm: its GPU tests run cuBLASLt's kernels and one
# element-wise conversion that uses no shared memory, so racecheck (shared-memory hazards) can only
# judge cuBLASLt there, and it reported 3 hazards in that executable on the H200, which
# this lab can neither fix nor judge. memcheck still runs on it.
TOOL_EXES = {
    "memcheck": r"^(reference|common)_",
    "racecheck": r"^(reference|common)_(?!ch11_test_lt_gemm$)",
    "synccheck": SYNC_EXES,
    "initcheck": r"^reference_ch0[45]_test_",
}
# Extra arguments per tool. None: initcheck's --track-unused-memory is off by default. With
# "--track-unused-memory no" every initcheck run exited 1 with no summary line on the H200
# (CUDA 13.0): recent compute-sanitizers take it as a switch without a value, so "no"
# was read as the program to run. Without it, the next run's 14 initcheck runs were all clean.
TOOL_ARGS: dict[str, list[str]] = {}
# GoogleTest suites each tool leaves out, beyond SANITIZER_FILTER's. memcheck: NcclGpu (ch08), the
# NCCL library's own calls: NCCL's initialization makes CUDA driver calls that fail by design and
# that it handles (NVIDIA/nccl#727: memcheck reports them as errors), and its kernels read user
# buffers in 16-byte units past an odd-sized end (NVIDIA/nccl#265). memcheck reported 4 errors in
# reference_ch08_lesson on the H200 (the log was not kept); with NcclGpu left out the
# next run was clean, which points at NCCL's calls without proving it. The lab's own ring
# all-reduce stays under memcheck (test_ring_gpu).
TOOL_SKIP_SUITES = {"memcheck": ["NcclGpu"]}


def sanitizer_filter(tool: str) -> str:
    """The --gtest_filter of a compute-sanitizer run of `tool`."""
    return SANITIZER_FILTER + "".join(f":{s}.*" for s in TOOL_SKIP_SUITES.get(tool, []))
MUTATION_GOAL = 0.95
# Programs whose output belongs in the results: (executable under the build dir, arguments).
PROGRAMS = [
    ("chapters/03_first_kernels/ch03_what_compiled", []),
    ("chapters/06_libraries/ch06_conv_algos", ["{work}/ch06_conv_algos.json"]),
    # the goodput at chapter 12's go-live budget (its checklist, line 19): TTFT p99 500 ms, TPOT p99 50 ms
    ("chapters/11_llm_serving/ch11_serving_sim",
     ["{work}/ch11_serving_sim.json", "--ttft-p99-ms", "500", "--tpot-p99-ms", "50"]),
]


def has_gpu_tests(exe: Path) -> bool:
    out = subprocess.run([str(exe), "--gtest_list_tests", f"--gtest_filter={SANITIZER_FILTER}"],
                         capture_output=True, text=True).stdout
    return any(line.startswith("  ") for line in out.splitlines())


def sanitize(exe: Path, tool: str, logdir: Path, tag: str | None = None) -> lt.SanitizerRun:
    """compute-sanitizer <tool> on the GPU tests of one test executable (log:
    sanitizer_<tool>_<exe>.log, or sanitizer_<tool>_<tag>_<exe>.log for a mutant's run)."""
    tag_part = f"{tag.replace(':', '_')}_" if tag and tag.startswith("mutant:") else ""
    log_file = logdir / f"sanitizer_{tool}_{tag_part}{exe.name}.log"
    cmd = ["compute-sanitizer", "--tool", tool, *TOOL_ARGS.get(tool, []),
           "--error-exitcode", str(lt.SANITIZER_ERROR_EXITCODE),
           "--print-limit", "20", str(exe), f"--gtest_filter={sanitizer_filter(tool)}"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=exe.parent)
        out, rc = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired:
        out, rc = "timed out after 900 s", None
    log_file.write_text("$ " + " ".join(cmd) + "\n" + out)
    return lt.parse_sanitizer(exe.name, tool, rc, out)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--preset", default="gpu")
    ap.add_argument("--skip-bench", action="store_true")
    ap.add_argument("--skip-sanitizer", action="store_true",
                    help="no compute-sanitizer runs, also none on the race pitfalls (their verdict "
                         "then rests on the tests alone, which catch a race only on some runs)")
    ap.add_argument("--skip-mutants", action="store_true", help="no mutation pass (step 4b)")
    ap.add_argument("--bench-only", action="store_true",
                    help="build, programs and benchmarks only (steps 1, 6, 7): the tables of a run whose "
                         "tests ran in another call; the summary says that no test ran")
    ap.add_argument("--sanitizer-tools", default="memcheck,racecheck,synccheck,initcheck",
                    help="comma-separated compute-sanitizer tools for the reference runs (step 5)")
    ap.add_argument("--bench-filter", default="", help="passed to --benchmark_filter")
    ap.add_argument("--bench-min-time", default="0.1")
    ap.add_argument("--bench-repetitions", type=int, default=5,
                    help="repetitions of every benchmark row (the ratios quote their median and spread)")
    ap.add_argument("--chapter", action="append", default=[],
                    help="only this chapter's tests, sanitizer runs and benchmarks (repeatable; "
                         "the whole tree is still built)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 8)
    args = ap.parse_args(argv)
    if args.bench_only:
        if args.skip_bench:
            lt.usage_error("--bench-only and --skip-bench leave nothing to run")
        args.skip_mutants = args.skip_sanitizer = True
    return args


class Suite:
    """One run of the suite: each numbered step of the module's docstring is a method, called in
    order by main(); the state they share (the summary, the timings, each phase's results) lives
    here. summary.json is checkpointed after each phase, so that a run stopped later (a device's
    time limit) still leaves its evidence."""

    def __init__(self, args: argparse.Namespace, why: str):
        self.args, self.why = args, why
        self.out = args.out.resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        self.work = self.out / "work"
        self.work.mkdir(exist_ok=True)
        self.t0 = time.time()
        self.timings: dict[str, float] = {}
        self.summary: dict = {"gpu": why, "preset": args.preset, "ok": True, "problems": []}
        self.scopes = [[c] for c in args.chapter] or [[]]
        self.bdir = lt.build_dir(args.preset)
        self.tracks: dict[str, list] = {"reference": [], "starter": [], "pitfall": []}
        self.per_chapter: dict = {}
        self.ex: dict = {}
        self.pit_counts: dict = {}
        self.race_exes: dict[str, list[str]] = {}
        self.race_pitfalls: set[str] = set()
        self.declared: dict[str, dict] = {}
        self.mutant_counts: dict[str, dict[str, int]] = {}
        self.mutant_race_exes: dict[str, list[str]] = {}
        self.pit_racecheck: dict[str, list[lt.SanitizerRun]] = {}
        self.mut_racecheck: dict[str, list[lt.SanitizerRun]] = {}
        self.sanitizer_bad: list[str] = []
        self.pit: dict = {}
        self.mut: dict = {}
        self.score = None
        self.summary["sanitizer"] = {}

    def problem(self, msg: str) -> None:
        self.summary["ok"] = False
        self.summary["problems"].append(msg)
        lt.log("PROBLEM: " + msg)

    def checkpoint(self, phase: str) -> None:
        """summary.json as it stands after `phase`; the last one (phase "done") is the verdict."""
        self.summary["phase_done"] = phase
        self.summary["seconds"] = {k: round(v, 1) for k, v in self.timings.items()}
        (self.out / "summary.json").write_text(json.dumps(self.summary, indent=2) + "\n")

    def build(self) -> None:
        """1. build (the generated starter checked first)."""
        lt.log(f"== build (preset {self.args.preset})")
        lt.run([sys.executable, str(lt.ROOT / "scripts" / "variants.py"), "--check"], self.work / "build.log")
        lt.configure_and_build(self.args.preset, self.work / "build.log", jobs=self.args.jobs)
        self.timings["build"] = time.time() - self.t0

    def run_tracks(self) -> None:
        """2-4. the reference, starter and pitfall tracks, and what they say."""
        args, bdir, work, summary = self.args, self.bdir, self.work, self.summary
        for track in () if args.bench_only else tuple(self.tracks):
            t = time.time()
            res = []
            for scope in self.scopes:
                tag = "_".join([track] + scope)
                if track == "reference":  # a result per test (one process per executable, faults alone)
                    res += lt.run_reference(bdir, [track] + scope, work, args.jobs)
                else:  # one process per executable: enough to see that each exercise / pitfall fails
                    res += lt.run_by_executable(bdir, [track] + scope, work / tag, args.jobs)
            self.tracks[track] = res
            self.timings[track] = time.time() - t
            lt.log(f"== {track}: {lt.count_line(lt.count(res))}")
        ref = self.tracks["reference"]
        for ch in sorted({r.chapter for r in ref}):
            self.per_chapter[ch] = {k: lt.count([r for r in ref if r.chapter == ch and r.kind == k])
                                    for k in ("cpu", "gpu")}
        summary["reference"] = {"total": lt.count(ref), "by_chapter": self.per_chapter,
                                "failed": [r.name for r in ref if r.status == "failed"],
                                "skipped": [r.name for r in ref if r.status == "skipped"]}
        if not ref and not args.bench_only:
            self.problem("no reference tests ran")
        for r in ref:
            if r.status == "failed":
                self.problem(f"reference test failed: {r.name}")

        self.ex = lt.exercise_table(self.tracks["starter"])
        summary["starter"] = {e: {"state": s.state, "passed": s.passed, "failed": s.failed, "skipped": s.skipped}
                              for e, s in self.ex.items()}
        for e, s in self.ex.items():
            if s.failed == 0:
                self.problem(f"starter exercise {e} does not fail ({s.state}): its tests have no teeth, or the "
                             "starter gives the answer")
        summary["pitfall_tests"] = self.pit_counts = lt.pitfall_table(self.tracks["pitfall"])
        self.checkpoint("tracks")

        # Pitfalls declared RACE (ctest label "race") and their test executables: racecheck runs on
        # them in step 5, beside the reference runs, and the verdict is given after it.
        for scope in self.scopes:
            self.race_exes.update(lt.race_pitfall_executables(
                lt.list_tests(bdir, ["pitfall", lt.RACE_LABEL] + scope, with_command=True)))
        self.race_pitfalls = {r.pitfall for r in self.tracks["pitfall"] if r.race} | set(self.race_exes)

    def run_mutants(self) -> None:
        """4b. mutants: build them (same build dir, -DCUDALAB_MUTANTS=ON), run each one's exercise tests."""
        args, bdir, work = self.args, self.bdir, self.work
        if args.skip_mutants:
            return
        t = time.time()
        for d in sorted((lt.ROOT / "chapters").glob("[0-9][0-9]_*")):
            ch = "ch" + d.name[:2]
            if args.chapter and ch not in args.chapter:
                continue
            ms = lt.load_mutants(d)
            for msg in lt.mutant_problems(ms, lt.reference_texts(d), d.name):
                self.problem(msg)
            self.declared.update({f"{ch}.{m['name']}": m for m in ms if isinstance(m.get("name"), str)})
        if self.declared:
            mlog = work / "mutants_build.log"
            # What the build dir had before: a build configured with the mutants (gpu_acceptance's
            # build step, for the memcheck step after this one) keeps them.
            had_mutants = (lt.cache_value(bdir, "CUDALAB_MUTANTS") or "OFF").upper() in ("ON", "1", "TRUE", "YES")
            lt.run(["cmake", "--preset", args.preset, "-DCUDALAB_MUTANTS=ON"], mlog)
            try:
                proc = lt.run(["cmake", "--build", "--preset", args.preset, "-j", str(args.jobs), "--", "-k", "0"],
                              mlog, check=False)
                if proc.returncode != 0:
                    self.problem("the mutant build failed in part (see mutants_build.log): such mutants show as "
                                 "not built")
                res = []
                race_names = {n for n, m in self.declared.items() if m.get("race")}
                for scope in self.scopes:
                    res += lt.run_by_executable(bdir, [lt.MUTANT_LABEL] + scope, work / "_".join(["mutant"] + scope),
                                                args.jobs, skip_suite=lt.FAULT_SUITE)
                    self.mutant_race_exes.update(lt.race_mutant_executables(
                        lt.list_tests(bdir, [lt.MUTANT_LABEL] + scope, with_command=True), race_names))
                self.mutant_counts = lt.mutant_table(res)
            finally:  # the learner's build stays lean: mutants are built only here, unless it had them
                if not had_mutants:
                    lt.run(["cmake", "--preset", args.preset, "-DCUDALAB_MUTANTS=OFF"], mlog, check=False)
        self.timings["mutants"] = time.time() - t
        self.summary["mutant_tests"] = self.mutant_counts
        self.checkpoint("mutants")

    def run_sanitizers(self) -> None:
        """5. memcheck, racecheck, synccheck and initcheck on the reference GPU tests (must be clean),
        racecheck on the race pitfalls' and race mutants' GPU tests (a hazard catches them)."""
        args, bdir = self.args, self.bdir
        if args.skip_sanitizer:
            return
        if shutil.which("compute-sanitizer") is None:  # said as a problem, not a traceback
            self.problem("compute-sanitizer is not on PATH: no sanitizer run (the CUDA toolkit's bin/ holds it; "
                         "--skip-sanitizer to run without)")
            return
        t = time.time()
        exes = sorted({p for p in (bdir / "tests").rglob("*") if p.is_file() and os.access(p, os.X_OK)
                       and (p.name.startswith("reference_") or p.name.startswith("common_"))
                       and (not args.chapter or any(f"_{c}_" in p.name for c in args.chapter))
                       and has_gpu_tests(p)})
        tools = [x.strip() for x in args.sanitizer_tools.split(",") if x.strip()]
        for tool in tools:
            if tool not in TOOL_EXES:
                lt.die(f"unknown compute-sanitizer tool '{tool}' (known: {', '.join(TOOL_EXES)})")
        jobs = [(e, tool, None) for e in exes for tool in tools if re.search(TOOL_EXES[tool], e.name)]
        for name in sorted(self.race_pitfalls):
            self.pit_racecheck[name] = []
            jobs += [(Path(e), "racecheck", name) for e in self.race_exes.get(name, [])
                     if Path(e).exists() and has_gpu_tests(Path(e))]
        for name in sorted(n for n, m in self.declared.items() if m.get("race")):
            self.mut_racecheck[name] = []
            jobs += [(Path(e), "racecheck", "mutant:" + name) for e in self.mutant_race_exes.get(name, [])
                     if Path(e).exists() and has_gpu_tests(Path(e))]
        # Longest first: the GEMM executables under racecheck set the wall time.
        jobs.sort(key=lambda j: (j[1] != "racecheck", "sgemm" not in j[0].name))
        with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            runs = list(pool.map(lambda a: sanitize(a[0], a[1], self.work, a[2]), jobs))
        for (e, tool, pitfall), run in zip(jobs, runs):
            if pitfall is not None and pitfall.startswith("mutant:"):
                self.mut_racecheck[pitfall[len("mutant:"):]].append(run)
                continue
            if pitfall is not None:
                self.pit_racecheck[pitfall].append(run)
                continue
            self.summary["sanitizer"][f"{tool}:{e.name}"] = run.summary
            if not run.clean:
                self.sanitizer_bad.append(f"{tool}:{e.name}")
                self.problem(f"compute-sanitizer {tool} on {e.name}: {run.summary}")
        self.timings["sanitizer"] = time.time() - t
        self.checkpoint("sanitizers")

    def judge(self) -> None:
        """The verdicts of steps 4 and 4b. A pitfall is caught when one of its tests fails; a race
        pitfall also when racecheck reports a hazard in its tests (every run, where a test catches a
        race only on some). A mutant is killed like a pitfall is caught; the score is killed /
        (killed + survived)."""
        skip = self.args.skip_sanitizer
        why_none = "--skip-sanitizer" if skip else "no GPU tests in its executables"
        for name, c in self.pit_counts.items():
            v = lt.judge_pitfall(c, name in self.race_pitfalls, None if skip else self.pit_racecheck.get(name, []),
                                 why_none)
            self.pit[name] = v
            if not v["caught"]:
                self.problem(f"pitfall {name} is not caught: {lt.pitfall_evidence(v)}")
        self.summary["pitfalls"] = self.pit

        for name in sorted(set(self.declared) | set(self.mutant_counts)):
            m = self.declared.get(name, {})
            counts = self.mutant_counts.get(name, {"passed": 0, "failed": 0, "skipped": 0, "not_built": 1})
            v = lt.judge_mutant(counts, bool(m.get("race")), None if skip else self.mut_racecheck.get(name, []),
                                why_none)
            v["exercise"], v["why"] = m.get("exercise"), m.get("why")
            self.mut[name] = v
        not_built = [n for n, v in self.mut.items() if v["state"] == "not built"]
        if not_built:
            self.problem(f"{len(not_built)} mutants not built or without tests (see mutants_build.log): "
                         f"{', '.join(not_built)}")
        self.score = lt.mutation_score(self.mut) if self.mut else None
        if self.score and self.score["share"] is not None and self.score["share"] < MUTATION_GOAL:
            self.problem(lt.score_line(self.score, MUTATION_GOAL))
        self.summary["mutants"] = {"verdicts": self.mut, "score": self.score}

    def run_programs(self) -> None:
        """6a. the programs whose output belongs in the results."""
        for rel, pargs in PROGRAMS:
            exe = self.bdir / rel
            if exe.exists() and (not self.args.chapter or any(f"/{c[2:]}_" in rel for c in self.args.chapter)):
                argv = [a.format(work=self.work) for a in pargs]
                lt.run([str(exe), *argv], self.work / f"{exe.name}.txt", check=False, quiet=True)

    def run_benchmarks(self) -> None:
        """6b. the benchmarks to JSON (each chapter's JSON kept as soon as it is written), then the
        report's tables and the key ratios."""
        args, work, out = self.args, self.work, self.out
        if args.skip_bench:
            return
        t = time.time()
        jsons = []
        exes = [e for e in lt.bench_executables(self.bdir)  # the reference track only (not *_starter)
                if re.fullmatch(r"bench_ch\d\d", e.name)
                and (not args.chapter or e.name.removeprefix("bench_") in args.chapter)]
        if args.chapter:  # in the order given: the chapters that matter most first
            exes.sort(key=lambda e: args.chapter.index(e.name.removeprefix("bench_")))
        (out / "bench").mkdir(exist_ok=True)
        for exe in exes:
            j = work / f"{exe.name}.json"
            # Per-repetition rows stay in the JSON (the report computes medians and spreads from
            # them); the console log shows the aggregates only.
            cmd = [str(exe), f"--benchmark_out={j}", "--benchmark_out_format=json",
                   lt.min_time_flag(exe, float(args.bench_min_time)),
                   f"--benchmark_repetitions={args.bench_repetitions}",
                   "--benchmark_display_aggregates_only=true"]
            if args.bench_filter:
                cmd.append(f"--benchmark_filter={args.bench_filter}")
            t_exe = time.time()
            proc = lt.run(cmd, work / f"{exe.name}.log", check=False, quiet=True,
                          timeout=600 * max(1, args.bench_repetitions))
            self.timings[exe.name] = time.time() - t_exe  # each chapter's seconds: plan the device time
            if proc.returncode != 0 or not j.exists():
                self.problem(f"benchmark {exe.name} exited {proc.returncode} (see its log)")
            if j.exists():
                jsons.append(j)
                # At once, so that a run stopped later keeps the chapters already measured.
                shutil.copy(j, out / "bench" / j.name)
                self.timings["bench"] = time.time() - t
                self.checkpoint(f"bench {exe.name}")
                wrong = [b.get("name", "?") for b in json.loads(j.read_text()).get("benchmarks", [])
                         if report.error_of(b) and "wrong result" in (report.error_of(b) or "")]
                for name in sorted(set(wrong)):
                    self.problem(f"benchmark {exe.name}: {name} computed a wrong result (error row)")
        self.timings["bench"] = time.time() - t
        if jsons:
            lt.run([sys.executable, str(lt.ROOT / "scripts" / "report.py"), str(work), *map(str, jsons),
                    "--title", f"Results on {self.why}"], work / "report.log", check=False, quiet=True)
            if (work / "report.md").exists():
                shutil.copy(work / "report.md", out / "report.md")
        self.summary["key_ratios"] = {j.stem.replace("bench_", ""): report.key_ratios(
            j.stem.replace("bench_", ""), json.loads(j.read_text())) for j in jsons}

    def summary_markdown(self) -> list[str]:
        """7. the summary's lines (summary.md, and what the run prints last)."""
        args, summary = self.args, self.summary
        scope_txt = ", ".join(args.chapter) if args.chapter else "all chapters"
        md = [f"# GPU suite — {self.why}", "", f"Scope: {scope_txt}. Result: {'PASS' if summary['ok'] else 'FAIL'}"
              + (" (--bench-only: benchmarks only, no test, pitfall, mutant or sanitizer ran)"
                 if args.bench_only else ""), ""]
        if not args.bench_only:  # the tracks, starter and pitfalls ran
            md += ["| track | passed | failed | skipped |", "| --- | ---: | ---: | ---: |"]
            for track, res in self.tracks.items():
                c = lt.count(res)
                md.append(f"| {track} | {c['passed']} | {c['failed']} | {c['skipped']} |")
            md += ["", "Reference by chapter (cpu / gpu):", ""]
            for ch, k in self.per_chapter.items():
                md.append(f"- {ch}: cpu {lt.count_line(k['cpu'])}; gpu {lt.count_line(k['gpu'])}")
            if summary["reference"]["skipped"]:
                md.append(f"- skipped on this GPU: {', '.join(summary['reference']['skipped'][:10])}")
            caught = sum(1 for s in self.ex.values() if s.failed)
            md += ["", f"Starter: {caught} of {len(self.ex)} exercises fail as they should"]
            md += [f"Pitfalls: {sum(1 for v in self.pit.values() if v['caught'])} of {len(self.pit)} caught "
                   "(by a failing test; a [race] pitfall also by a racecheck hazard)"]
            for name, v in self.pit.items():
                md.append("- " + lt.pitfall_line(name, v))
        if self.mut:
            md += ["", lt.score_line(self.score, MUTATION_GOAL) + " (killed by a failing test; a [race] mutant also "
                   "by a racecheck hazard)"]
            md += ["- " + lt.mutant_line(name, v) for name, v in self.mut.items() if v["state"] != "killed"]
            md.append(f"- killed: {', '.join(n for n, v in self.mut.items() if v['state'] == 'killed')}")
        if summary["sanitizer"]:
            md += ["", f"compute-sanitizer: {len(summary['sanitizer']) - len(self.sanitizer_bad)} of "
                   f"{len(summary['sanitizer'])} reference runs clean ({args.sanitizer_tools}; synccheck/initcheck "
                   f"on the executables of TOOL_EXES, racecheck not on cuBLASLt-only ones; filter {SANITIZER_FILTER}"
                   + "".join(f", {t} also -{':'.join(s + '.*' for s in ss)}" for t, ss in TOOL_SKIP_SUITES.items())
                   + ")"]
            md += [f"- not clean: {k}: {summary['sanitizer'][k]}" for k in self.sanitizer_bad]
        if summary.get("key_ratios"):
            md += ["", "Key ratios (same run):"]
            for ch, rs in summary["key_ratios"].items():
                for r in rs:
                    md.append(f"- {ch} {r['label']}: {r['text']}")
        if summary["problems"]:
            md += ["", "Problems:"] + [f"- {p}" for p in summary["problems"][:50]]
        md += ["", "Seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in self.timings.items())]
        return md

    def finish(self) -> int:
        """7. summary.md and summary.json, every log in artifacts.tar.gz; the exit status."""
        self.timings["total"] = time.time() - self.t0
        self.summary["seconds"] = {k: round(v, 1) for k, v in self.timings.items()}
        self.summary["phase_done"] = "done"
        md = self.summary_markdown()
        (self.out / "summary.md").write_text("\n".join(md) + "\n")
        (self.out / "summary.json").write_text(json.dumps(self.summary, indent=2) + "\n")
        with tarfile.open(self.out / "artifacts.tar.gz", "w:gz") as tar:
            tar.add(self.work, arcname="artifacts")
        shutil.rmtree(self.work, ignore_errors=True)
        print("\n".join(md))
        return 0 if self.summary["ok"] else 1


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    has_gpu, why = lt.gpu_visible()
    if not has_gpu:
        lt.die(f"gpu_suite needs a GPU: {why}")
    suite = Suite(args, why)
    suite.build()
    suite.run_tracks()
    suite.run_mutants()
    suite.run_sanitizers()
    suite.judge()
    suite.run_programs()
    suite.run_benchmarks()
    return suite.finish()


if __name__ == "__main__":
    sys.exit(main())
