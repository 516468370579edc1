"""Grade a track (default: starter, the learner's) exercise by exercise.

    scripts/grade [--preset gpu|ci] [--track starter] [--chapter 3] [--out grades/]
    scripts/grade --submission DIR [--out grades/]      a student's tree (instructors)

Builds the track's test executables (keep-going: a file that does not compile stops nothing
else), runs them (one process per executable; a crash or a hang fails the case it was running
and the others run again) and writes OUT/grade.md (a table per exercise), OUT/grade.json,
OUT/results.json (Gradescope's format), OUT/grade.xml (JUnit, one testcase per exercise) and
OUT/tests.xml (JUnit, one testcase per test). A starter file that does not compile scores 0 for
its exercises, with its first compiler error, and the rest is graded in a copy of the tree where
that file is its untouched version (build/scratch-fallback/). The rules (scripts/gradelib.py,
argued in docs/instructors.md): all or nothing per exercise; a test skipped for a missing
capability is not counted and the report names what was missing; an exercise none of whose tests
that read the learner's code ran is "not graded". Labels and --chapter match exactly.
On a GPU, each exercise with a speed goal (bench/chNN/chNN.toml) is benchmarked: goal met or not, with
the ratio to the vendor library, in a column of its own (optional points: [speed] in
scripts/grading.toml).

--submission DIR: DIR is a student's copy (a handout or a clone). Only the exercise regions of its
starter files are taken (and their HELPERS regions), spliced into a clean copy of this repository
at HEAD (under build/submission/), which is then graded; a region identical to the reference
solution is flagged, and a region that cannot be placed is "needs review", with the reason.

Exit status: 0 every graded exercise is done, 1 one fails (or needs review), 2 a wrong argument
(nothing was built), 3 nothing could be graded on this machine (e.g. no GPU for GPU exercises).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/: labtools, gradelib, ...
import gradelib as gl  # noqa: E402
import labtools as lt  # noqa: E402


def measure_speed(bdir: Path, track: str, verdicts: list[gl.Verdict], rounds: int, work: Path) -> dict[str, gl.SpeedVerdict]:
    """learner / vendor for every exercise with a goal whose tests pass (median of `rounds` runs).
    A failing exercise is not benchmarked: its row would be an error row (the output check), and
    building and running the benchmarks of a whole untouched starter costs minutes for nothing."""
    out: dict[str, gl.SpeedVerdict] = {}
    by_ch: dict[str, list[gl.Goal]] = {}
    for v in verdicts:
        if v.state != "done":
            continue
        for g in gl.goals_of(v.exercise, lt.ROOT / "bench"):
            by_ch.setdefault(g.chapter, []).append(g)
    for ch, goals in by_ch.items():
        name = f"bench_{ch}_starter" if track == "starter" else f"bench_{ch}"
        try:
            lt.configure_and_build(preset_of(bdir), log_file=work / "build.log", targets=[name], configure=False)
        except SystemExit as e:
            lt.log(f"speed: {name} did not build: {str(e).splitlines()[0]}")
            continue
        exe = bdir / "bench" / name
        rx = gl.bench_filter(goals)
        flag = lt.min_time_flag(exe, 0.2)
        runs = []
        for i in range(rounds):
            j = work / f"{name}_{i}.json"
            lt.run([str(exe), f"--benchmark_filter={rx}", f"--benchmark_out={j}", "--benchmark_out_format=json", flag],
                   work / "bench.log", check=False, quiet=True)
            if j.exists():
                try:
                    runs.append(json.loads(j.read_text()))
                except ValueError:
                    pass
        for g in goals:
            out[g.exercise] = gl.speed_verdict(g, runs, [])
    return out


def preset_of(bdir: Path) -> str:
    return bdir.name


def build_tests(args, preset: str, bdir: Path, labels: list[str], out: Path) -> int | None:
    """Builds what the grade needs, keep-going. When starter files do not compile, grades in a
    scratch copy of the tree where they are their untouched versions (their exercises score 0 with
    the error) and returns that grade's exit status; None when the build here is complete."""
    cmake_args = [f"-DCUDALAB_TRACKS={args.tracks}"] if args.tracks else []
    lt.configure_and_build(preset, log_file=out / "build.log", targets=["cudalab"], cmake_args=cmake_args)
    targets = sorted({Path(c[0]).name for _, c in lt.list_tests(bdir, labels, with_command=True).values() if c})
    if not targets:
        lt.die(f"no tests carry the labels {labels}")
    lt.log(f"building {len(targets)} test executables (log: {out / 'build.log'}) ...")
    try:
        lt.configure_and_build(preset, log_file=out / "build.log", targets=targets, configure=False, jobs=args.jobs,
                               keep_going=True)
    except lt.BuildError as e:
        fb = None if args.compile_errors else lt.compile_fallback(e, "grade")
        if fb is None:
            # not a starter file (a test or a link step): what did build is graded, the rest fails
            lt.log("grade: the build failed outside the starter files; the tests that built are graded:\n" + str(e))
            return None
        tree, report = fb
        errs = out / "compile_errors.json"
        errs.write_text(json.dumps(report, indent=2) + "\n")
        cmd = [sys.executable, str(tree / "scripts" / "grade"), "--out", str(out), "--compile-errors", str(errs),
               "--track", args.track, "--rounds", str(args.rounds), "-j", str(args.jobs)]
        for opt in ("preset", "chapter", "tracks", "splice_report"):
            if getattr(args, opt):
                cmd += [f"--{opt.replace('_', '-')}", str(getattr(args, opt))]
        if args.no_bench:
            cmd.append("--no-bench")
        lt.log(f"grade: grading in {tree} (the files above in their untouched version)")
        return subprocess.call(cmd, cwd=tree)
    return None


def apply_overrides(verdicts: list[gl.Verdict], compile_errors: dict, review: dict[str, list[str]]) -> None:
    """A file that did not compile: its exercises fail with the compiler's first error. A region
    --submission could not place: "needs review" with the reason (never a silent 0)."""
    by_ex: dict[str, list[str]] = {}
    for rel, r in compile_errors.items():
        for ex in r.get("exercises", []):
            by_ex.setdefault(ex, []).append(r["error"] if rel in r["error"] else f"{rel}: {r['error']}")
    for v in verdicts:
        if v.exercise in by_ex:
            # the tests ran on the untouched version of the file: their counts say nothing of the
            # student's code, which did not compile
            v.state, v.graded, v.score = "failing", True, 0.0
            v.passed = v.failed = v.skipped = 0
            v.needs = []
            v.first_failure = "does not compile: " + "; ".join(by_ex[v.exercise])
            v.failing = ["(does not compile)"]
        elif v.exercise in review:
            v.state, v.graded, v.score = "needs review", True, 0.0
            v.first_failure = "needs review: " + "; ".join(review[v.exercise])
            v.failing = v.failing or ["(needs review)"]


def grade_here(args, splice: dict | None = None) -> int:
    cfg = gl.grading_config()
    default, points, speed_points, cpu_graded = cfg.default, cfg.points, cfg.speed, cfg.cpu_graded
    chapter = args.chapter
    preset = args.preset or lt.default_preset()
    has_gpu, why = lt.gpu_visible()
    bdir = lt.build_dir(preset)
    out = args.out
    labels = [args.track] + ([chapter] if chapter else [])

    if not args.no_build:
        rc = build_tests(args, preset, bdir, labels, out)
        if rc is not None:
            return rc
    work = out / "runs"  # each test process's log and XML, kept: a row's failure names its log
    shutil.rmtree(work, ignore_errors=True)
    results = lt.run_tests(bdir, labels, work, args.jobs)
    if not results:
        lt.die(f"no tests carry the labels {labels}")
    lt.write_junit(results, out / "tests.xml", f"cudalab.{args.track}")
    verdicts = gl.grade(lt.to_cases(results), points, default, cpu_graded, chapter)
    compile_errors = json.loads(args.compile_errors.read_text()) if args.compile_errors else {}
    apply_overrides(verdicts, compile_errors, (splice or {}).get("review", {}))
    speed = measure_speed(bdir, args.track, verdicts, args.rounds, work) if has_gpu and not args.no_bench else {}

    rows = []
    flags = (splice or {}).get("flags", {})
    for v in verdicts:
        d = v.as_dict()
        d["compile_error"] = v.failing == ["(does not compile)"]
        sv = speed.get(v.exercise)
        goals = gl.goals_of(v.exercise, lt.ROOT / "bench")
        d["speed"] = None
        if goals:
            g = goals[0]
            met = bool(sv and sv.met) and v.state == "done"
            d["speed"] = {"label": g.label, "goal": g.goal, "ratio": None if not sv else sv.learner,
                          "met": None if not sv else met,
                          "points": speed_points.get(v.exercise, 0.0),
                          "score": speed_points.get(v.exercise, 0.0) if met else 0.0}
        d["flags"] = flags.get(v.exercise, [])
        rows.append(d)
    t = gl.totals(verdicts)
    speed_score = sum(r["speed"]["score"] for r in rows if r["speed"])
    speed_possible = sum(r["speed"]["points"] for r in rows if r["speed"])
    summary = {"track": args.track, "chapter": chapter, "gpu": why if has_gpu else None, **t,
               "speed_score": speed_score, "speed_possible": speed_possible, "exercises": rows,
               "submission": (splice or {}).get("submission")}
    (out / "grade.json").write_text(json.dumps(summary, indent=2) + "\n")

    def speed_cell(r):
        s = r["speed"]
        if not s:
            return ""
        goal = f">= {s['goal']:.2f}x" if s["goal"] is not None else "no goal"
        if s["met"] is None or s["ratio"] is None:
            why = ("no GPU" if not has_gpu else "its tests fail" if r["state"] != "done"
                   else "no ratio: an error row or a missing row, see the benchmark log")
            return f"{goal}: not measured ({why})"
        return f"{s['ratio']:.2f}x ({goal}: {'met' if s['met'] else 'not met'}) {s['score']:g}/{s['points']:g}"

    title = f"# Grade — {args.track} track" + (f", {chapter}" if chapter else "")
    md = [title, "", f"Machine: {why if has_gpu else 'no GPU (' + why + ')'}", ""]
    if splice:
        md += [f"Submission: {splice['submission']} (exercise regions only, spliced into a clean copy at {splice['head']})", ""]
    if compile_errors:
        md += ["Did not compile (each replaced by its untouched version so that the rest could be graded): "
               + "; ".join(f"{rel} ({', '.join(r['exercises']) or 'no exercise'})" for rel, r in compile_errors.items()), ""]
    md += ["| exercise | state | tests passed / run | skipped (needs) | score | speed vs vendor (goal) | flags |",
           "| --- | --- | ---: | --- | ---: | --- | --- |"]
    for r in rows:
        sk = f"{r['skipped']}" + (f" ({'; '.join(r['needs'])})" if r["needs"] else "")
        ran = "does not compile" if r["compile_error"] else f"{r['passed']} / {r['passed'] + r['failed']}"
        md.append(f"| {r['exercise']} | {r['state']} | {ran} | {sk} "
                  f"| {r['score']:g} / {r['points']:g} | {speed_cell(r)} | {', '.join(r['flags'])} |")
    md += ["", f"**Total: {t['score']:g} / {t['graded_points']:g} graded points** ({t['possible_points']:g} possible"
           + (f"; {t['not_graded_points']:g} not graded on this machine" if t["not_graded_points"] else "") + ")"
           + (f"; speed: {speed_score:g} / {speed_possible:g}" if speed_possible and has_gpu else ""), ""]
    fails = [r for r in rows if r["failing_tests"]]
    if fails:
        md += ["First failure of each failing exercise (all results: tests.xml):", ""]
        for r in fails:
            first = r["first_failure"].splitlines()
            what = "does not compile" if r["compile_error"] else r["state"] if r["state"] == "needs review" \
                else f"{r['failed']} failing"
            md += [f"- {r['exercise']} ({what}): `{first[0]}`" + (f" — {first[1].strip()}" if len(first) > 1 else "")]
    (out / "grade.md").write_text("\n".join(md) + "\n")

    cases = []
    for r in rows:
        status = {"failing": "failed", "needs review": "failed", "done": "passed"}.get(r["state"], "skipped")
        msg = (f"{r['failed']} of {r['passed'] + r['failed']} tests fail" if r["state"] == "failing" and r["failed"]
               else r["first_failure"].splitlines()[0] if status == "failed" and r["first_failure"]
               else "not graded: needs " + "; ".join(r["needs"]) if status == "skipped" else "")
        speed = f"; speed {r['speed']['ratio']:.3f}x vendor" if r["speed"] and r["speed"]["ratio"] is not None else ""
        cases.append(lt.JunitCase(f"cudalab.{r['chapter']}", f"exercise {r['exercise']}", status, msg,
                                  r["first_failure"], f"score {r['score']:g}/{r['points']:g}{speed}"))
    lt.write_junit_cases(cases, out / "grade.xml", f"cudalab.{args.track}")
    (out / "results.json").write_text(json.dumps(gradescope(rows, t, speed_score, speed_possible, has_gpu, why), indent=2) + "\n")
    print("\n".join(md))
    print(f"wrote {out}/grade.md, grade.json, results.json (Gradescope), grade.xml (per exercise), tests.xml (per test)")
    if any(r["state"] in ("failing", "needs review") for r in rows):
        return lt.EXIT_FAILED
    if rows and not any(r["graded"] for r in rows):
        lt.log(f"grade: nothing was graded on this machine (exit {lt.EXIT_NOT_GRADED}): every exercise needs "
               + "; ".join(sorted({n for r in rows for n in r["needs"]}) or ["tests that run here"]))
        return lt.EXIT_NOT_GRADED
    return 0


def gradescope(rows: list[dict], t: dict, speed_score: float, speed_possible: float, has_gpu: bool, why: str) -> dict:
    """results.json in Gradescope's autograder format: score, max_score, one test per exercise
    (and per speed goal, when it has points) with name, score, max_score, status, output."""
    tests = []
    for r in rows:
        out = r["first_failure"] or ("not graded here: needs " + "; ".join(r["needs"]) if not r["graded"] else
                                     f"{r['passed']} tests passed")
        tests.append({"name": f"exercise {r['exercise']}", "score": r["score"], "max_score": r["points"],
                      "status": "passed" if r["state"] == "done" else "failed", "output": out,
                      "tags": [r["chapter"], r["state"]]})
        s = r["speed"]
        if s and s["points"]:
            tests.append({"name": f"exercise {r['exercise']} speed ({s['label']})", "score": s["score"],
                          "max_score": s["points"], "status": "passed" if s["met"] else "failed",
                          "output": "not measured" if s["ratio"] is None else
                          f"{s['ratio']:.2f}x the vendor (goal {s['goal']}x)"})
    score = t["score"] + (speed_score if has_gpu else 0.0)
    return {"score": round(score, 2), "max_score": t["possible_points"] + speed_possible,
            "output": f"graded on {why}" if has_gpu else f"graded without a GPU ({why}): GPU exercises not graded",
            "tests": tests}


def grade_submission(args) -> int:
    import regions
    sub = args.submission.resolve()
    dest = lt.ROOT / "build" / "submission" / "src"
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=lt.ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=lt.ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    flags: dict[str, list[str]] = {}
    review: dict[str, list[str]] = {}
    lines = []
    for d in sorted((dest / "chapters").glob("[0-9][0-9]_*")):
        for ref in sorted((d / "reference").glob("*")):
            if ref.suffix not in regions.SUFFIXES:
                continue
            clean = d / "starter" / ref.name
            if not clean.exists():
                continue
            mine_path = sub / "chapters" / d.name / "starter" / ref.name
            mine = mine_path.read_text() if mine_path.exists() else None
            pristine = dest / lt.PRISTINE_DIR / clean.relative_to(dest)
            pristine.parent.mkdir(parents=True, exist_ok=True)
            pristine.write_text(clean.read_text())
            text, rep = regions.splice_file(ref.read_text(), clean.read_text(), mine, str(clean.relative_to(dest)))
            clean.write_text(text)
            for r in rep:
                if r.review:
                    review.setdefault(r.exercise, []).append(r.review)
                    flags.setdefault(r.exercise, []).append("needs review")
                if r.identical_to_reference:
                    flags.setdefault(r.exercise, []).append(f"identical to the reference solution ({ref.name})")
                lines.append(f"{r.exercise:>5}  {ref.parent.parent.name}/starter/{ref.name}: {r.status}"
                             + ("  [identical to the reference]" if r.identical_to_reference else "")
                             + (f"  [needs review: {r.review}]" if r.review else ""))
    lt.log(f"submission {sub}: exercise regions spliced into a clean copy at {head} ({dest})")
    for l in lines:
        lt.log("  " + l)
    report = {"submission": str(sub), "head": head, "flags": flags, "review": review}
    sp = args.out / "splice.json"
    sp.write_text(json.dumps(report, indent=2) + "\n")
    cmd = [sys.executable, str(dest / "scripts" / "grade"), "--out", str(args.out.resolve()),
           "--splice-report", str(sp), "--track", "starter", "--tracks", "starter", "--rounds", str(args.rounds),
           "-j", str(args.jobs)]
    for opt in ("preset", "chapter"):
        if getattr(args, opt):
            cmd += [f"--{opt}", getattr(args, opt)]
    if args.no_bench:
        cmd.append("--no-bench")
    return subprocess.call(cmd, cwd=dest)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", choices=["gpu", "ci", "debug"])
    ap.add_argument("--track", default="starter", help="starter (default) or reference (not in a handout)")
    ap.add_argument("--chapter", help="only this chapter, exactly: 3, 03 or ch03")
    ap.add_argument("--out", type=Path, default=lt.ROOT / "grades")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--no-bench", action="store_true", help="skip the speed goals")
    ap.add_argument("--rounds", type=int, default=3, help="benchmark runs per exercise (median)")
    ap.add_argument("--submission", type=Path, help="grade a student's tree (see above)")
    ap.add_argument("--splice-report", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--compile-errors", type=Path, help=argparse.SUPPRESS)  # from the tree whose build failed
    ap.add_argument("--tracks", help=argparse.SUPPRESS)  # -DCUDALAB_TRACKS for the build
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    # Every argument is checked before anything is built or written.
    tracks = ["starter"] + ([] if (lt.ROOT / ".cudalab-handout").exists() else ["reference"])
    if args.track not in tracks:
        lt.usage_error(f"--track {args.track}: not a track here; the tracks: {', '.join(tracks)}")
    if args.chapter:
        args.chapter = lt.parse_chapter(args.chapter)
    if args.rounds < 1:
        lt.usage_error(f"--rounds {args.rounds}: at least 1")
    if args.jobs < 1:
        lt.usage_error(f"-j {args.jobs}: at least 1")
    lt.check_seed_env()
    if args.submission:
        sub = args.submission
        if not sub.exists():
            lt.usage_error(f"--submission {sub}: no such folder")
        if not sub.is_dir() or not (sub / "chapters").is_dir():
            lt.usage_error(f"--submission {sub}: not a student's copy (no chapters/ folder): give the root of the handout or clone")
    args.out = lt.writable_dir(args.out, "--out").resolve()
    if args.submission:
        return grade_submission(args)
    splice = json.loads(args.splice_report.read_text()) if args.splice_report else None
    return grade_here(args, splice)


if __name__ == "__main__":
    sys.exit(main())
