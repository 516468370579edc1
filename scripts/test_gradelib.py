"""Unit tests of the grading rules (scripts/gradelib.py), on synthetic results."""
from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gradelib as gl  # noqa: E402

NO_GPU = "test.cpp:12\nskipped: no GPU: cudaGetDeviceCount says cudaErrorNoDevice (no CUDA-capable device)"
CC90 = "test.cpp:29\nskipped: wgmma needs compute capability exactly 9.0 (sm_90a)"
CUDNN = "test.cpp:75\nskipped: built without cuDNN (CUDALAB_HAVE_CUDNN=OFF)"


def case(name, ex, status, kind="gpu", msg="", chapter=None):
    ch = chapter or f"ch{int(ex.split('.')[0]):02d}"
    return gl.Case(name, [ch, "starter", f"ex:{ex}", kind], status, msg)


class UntouchedStarterScoresZero(unittest.TestCase):
    def test_every_exercise_scores_zero_when_one_test_fails(self):
        # an untouched starter: worked-example tests and argument checks pass, the exercise's fail
        cases = [case("a/Args.Bad", "5.1", "passed", "cpu"), case("a/Gpu.Worked/interleaved", "5.1", "passed"),
                 case("a/Gpu.Run/sequential", "5.1", "failed", msg="Expected equality\n  sum: 0\n  want: 33"),
                 case("b/Gpu.Run", "6.1", "failed"), case("b/Gpu.Other", "6.1", "passed")]
        vs = gl.grade(cases)
        self.assertEqual([v.score for v in vs], [0.0, 0.0])
        self.assertEqual(gl.totals(vs)["score"], 0)
        self.assertEqual(gl.untouched_leaks(cases), [])
        v = vs[0]
        self.assertEqual(v.state, "failing")
        self.assertEqual((v.failed, v.ran), (1, 3))
        self.assertIn("a/Gpu.Run/sequential", v.first_failure)
        self.assertIn("want: 33", v.first_failure)

    def test_all_or_nothing(self):
        cases = [case(f"t{i}", "3.2", "passed") for i in range(99)] + [case("t99", "3.2", "failed")]
        self.assertEqual(gl.judge("3.2", cases, points=2).score, 0.0)
        cases[-1] = case("t99", "3.2", "passed")
        self.assertEqual(gl.judge("3.2", cases, points=2).score, 2.0)

    def test_untouched_leaks_finds_an_exercise_without_teeth(self):
        cases = [case("x", "4.4", "passed"), case("y", "4.5", "failed")]
        self.assertEqual(gl.untouched_leaks(cases), ["4.4"])


class GradingConfigRead(unittest.TestCase):
    """scripts/grading.toml, read once for lab and grade."""

    def test_the_committed_file_and_a_fixture(self):
        import tempfile
        cfg = gl.grading_config()
        self.assertGreater(cfg.default, 0)
        self.assertTrue(all(gl.norm_exercise(e) == e for e in cfg.cpu_graded))
        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / "grading.toml"
            f.write_text('default = 2\ncpu_graded = ["5.08", 3.1]\n[points]\n"5.4" = 3\n[speed]\n"5.4" = 1\n')
            cfg = gl.grading_config(f)
        self.assertEqual((cfg.default, cfg.points, cfg.speed), (2.0, {"5.4": 3.0}, {"5.4": 1.0}))
        self.assertEqual(cfg.cpu_graded, {"5.8", "3.1"})


class SkipRules(unittest.TestCase):
    def test_capability_skip_does_not_zero_a_finished_exercise(self):
        cases = [case("wmma", "6.5", "passed"), case("wgmma", "6.5", "skipped", msg=CC90)]
        v = gl.judge("6.5", cases, points=2)
        self.assertEqual((v.state, v.score), ("done", 2))
        self.assertEqual(v.needs, ["wgmma needs compute capability exactly 9.0 (sm_90a)"])
        self.assertIn("compute capability", v.line())

    def test_cudnn_skip(self):
        cases = [case("conv", "6.4", "passed"), case("cudnn", "6.4", "skipped", msg=CUDNN)]
        self.assertEqual(gl.judge("6.4", cases).state, "done")

    def test_no_gpu_gpu_exercise_is_not_graded_even_if_cpu_argument_checks_pass(self):
        cases = [case("args", "3.2", "passed", "cpu"), case("run", "3.2", "skipped", msg=NO_GPU)]
        v = gl.judge("3.2", cases)
        self.assertFalse(v.graded)
        self.assertEqual(v.score, 0)
        self.assertEqual(v.needs, ["a GPU"])
        self.assertTrue(v.line().startswith("not graded: needs a GPU"))

    def test_cpu_graded_exercise_is_graded_without_a_gpu(self):
        cases = [case("calc", "5.8", "passed", "cpu"), case("probe", "5.8", "skipped", msg=NO_GPU)]
        v = gl.judge("5.8", cases, cpu_graded={"5.8"})
        self.assertEqual((v.graded, v.state, v.score), (True, "done", 1.0))
        self.assertIn("needs a GPU", v.line())

    def test_a_failure_is_graded_whatever_skipped(self):
        cases = [case("args", "3.2", "failed", "cpu"), case("run", "3.2", "skipped", msg=NO_GPU)]
        v = gl.judge("3.2", cases)
        self.assertEqual((v.graded, v.state, v.score), (True, "failing", 0.0))

    def test_everything_skipped(self):
        v = gl.judge("6.5", [case("wgmma", "6.5", "skipped", msg=CC90)])
        self.assertEqual(v.state, "not graded")
        self.assertIn("compute capability", v.line())

    def test_no_test_at_all(self):
        v = gl.judge("9.9", [])
        self.assertFalse(v.graded)

    def test_skip_reason(self):
        self.assertEqual(gl.skip_reason(CC90), "wgmma needs compute capability exactly 9.0 (sm_90a)")
        self.assertTrue(gl.is_no_gpu(gl.skip_reason(NO_GPU)))
        self.assertEqual(gl.need_phrase(gl.skip_reason(NO_GPU)), "a GPU")


class ExactLabels(unittest.TestCase):
    def test_exercise_5_1_is_not_5_10(self):
        cases = [case("a", "5.1", "passed"), case("b", "5.10", "failed")]
        self.assertEqual([c.name for c in gl.select(cases, exercise="5.1")], ["a"])
        self.assertEqual(gl.judge("5.1", cases).state, "done")
        self.assertEqual(gl.judge("5.10", cases).state, "failing")

    def test_chapter_3_is_not_4_3(self):
        cases = [case("a", "3.1", "passed", "cpu"), case("b", "4.3", "failed", "cpu"), case("c", "6.3", "failed")]
        self.assertEqual([v.exercise for v in gl.grade(cases, chapter=gl.norm_chapter("3"))], ["3.1"])
        for s in ("3", "03", "ch3", "ch03", "03_first_kernels"):
            self.assertEqual(gl.norm_chapter(s), "ch03")
        with self.assertRaises(ValueError):
            gl.norm_chapter("3.1")

    def test_ctest_label_regex_is_anchored_and_escaped(self):
        import re
        import labtools as lt
        rx = lt.label_regex("ex:5.1")
        self.assertTrue(re.search(rx, "ex:5.1"))
        self.assertFalse(re.search(rx, "ex:5.10"))
        self.assertFalse(re.search(rx, "ex:521"))

    def test_exercise_ids_sort_numerically(self):
        cases = [case("a", "5.10", "passed"), case("b", "5.2", "passed"), case("c", "5.1", "passed")]
        self.assertEqual(gl.exercises_of(cases), ["5.1", "5.2", "5.10"])

    def test_norm_exercise(self):
        self.assertEqual(gl.norm_exercise("ex:05.4"), "5.4")
        with self.assertRaises(ValueError):
            gl.norm_exercise("5")


class SpeedGoals(unittest.TestCase):
    GOAL = gl.Goal("5.4", "ch05", "scan / CUB", r"^BM_scan_int/2$", r"^BM_scan_int_cub$", "GB/s", 0.8)

    @staticmethod
    def bench_json(mine, vendor):
        return {"benchmarks": [{"name": "BM_scan_int/2/manual_time", "run_type": "iteration", "GB/s": mine},
                               {"name": "BM_scan_int_cub/manual_time", "run_type": "iteration", "GB/s": vendor}]}

    def test_ratio_of_ratios(self):
        learner = [self.bench_json(600, 1000), self.bench_json(620, 1000), self.bench_json(100, 1000)]
        reference = [self.bench_json(900, 1000), self.bench_json(950, 1000), self.bench_json(920, 1000)]
        sv = gl.speed_verdict(self.GOAL, learner, reference)
        self.assertAlmostEqual(sv.learner, 0.6)
        self.assertAlmostEqual(sv.reference, 0.92)
        self.assertAlmostEqual(sv.learner_over_reference, 0.6 / 0.92)
        self.assertFalse(sv.met)
        self.assertTrue(any("not met" in l for l in sv.lines()))
        self.assertTrue(any("ratio of the two ratios" in l for l in sv.lines()))

    def test_goal_met_and_missing_rows(self):
        sv = gl.speed_verdict(self.GOAL, [self.bench_json(900, 1000)], [])
        self.assertTrue(sv.met)
        self.assertIsNone(sv.reference)
        self.assertIsNone(sv.learner_over_reference)
        self.assertIsNone(gl.speed_verdict(self.GOAL, [{"benchmarks": []}], []).learner)

    def test_error_rows_do_not_count(self):
        bad = self.bench_json(5000, 1000)
        bad["benchmarks"][0]["error_occurred"] = True
        self.assertIsNone(gl.speed_verdict(self.GOAL, [bad], []).learner)

    def test_bench_filter_names_the_rows_when_it_can(self):
        # Plain row regexes go through as they are (without the $: instance names may end in
        # /manual_time); \d becomes [0-9]; Python-only syntax falls back to the family.
        self.assertEqual(gl.bench_filter([self.GOAL]), "(^BM_scan_int/2)|(^BM_scan_int_cub)")
        g = gl.Goal("6.2", "ch06", "", r"^BM_sgemm/blocktile_2d/\d+$", r"^BM_sgemm_cublas/4096", "TFLOP/s", 0.5)
        self.assertEqual(gl.bench_filter([g]), "(^BM_sgemm/blocktile_2d/[0-9]+)|(^BM_sgemm_cublas/4096)")
        h = gl.Goal("6.2", "ch06", "", r"^BM_sgemm/(?P<s>\w+)/4096$", r"^BM_sgemm_cublas/4096$", "TFLOP/s", 0.5)
        self.assertEqual(gl.bench_filter([h]), "(^BM_sgemm)|(^BM_sgemm_cublas/4096)")

    def test_goals_from_toml(self):
        data = {"ratio": [{"label": "x", "row": "a", "vendor": "b", "metric": "GB/s"},
                          {"label": "y", "row": "c", "vendor": "d", "exercise": "5.4", "goal": 0.8}]}
        gs = gl.goals_from_toml("ch05", data)
        self.assertEqual([(g.exercise, g.goal) for g in gs], [("5.4", 0.8)])


if __name__ == "__main__":
    unittest.main()


class OneProcessPerExecutable(unittest.TestCase):
    """labtools.run_by_executable against a fake GoogleTest executable: per-case results, failure
    text and skip messages from the XML; cases a crash left unreported are failures."""

    FAKE = r'''#!/usr/bin/env python3
import sys
out = next(a.split("xml:", 1)[1] for a in sys.argv if a.startswith("--gtest_output=xml:"))
cases = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--gtest_filter=")).split(":")
rows = []
for c in cases:
    suite, name = c.split(".", 1)
    if name == "Crash":
        break
    body = {"Fail": '<failure message="m">test.cpp:3\nExpected: 1\nActual: 2</failure>',
            "Skip": '<skipped message="test.cpp:9&#x0A;skipped: needs compute capability 9.0"/>'}.get(name, "")
    res = "skipped" if name == "Skip" else "completed"
    rows.append(f'<testcase name="{name}" classname="{suite}" result="{res}">{body}</testcase>')
open(out, "w").write('<testsuites><testsuite name="s">' + "".join(rows) + "</testsuite></testsuites>")
sys.exit(1 if len(rows) < len(cases) else 0)
'''

    def test_results_per_case(self):
        import labtools as lt
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            exe = Path(tmp) / "fake_test"
            exe.write_text(self.FAKE)
            exe.chmod(0o755)
            names = ["Ok", "Fail", "Skip", "Crash", "After"]
            tests = {f"starter.ch05.SGpu.{n}": (["ch05", "starter", "ex:5.1", "gpu"], [str(exe), f"--gtest_filter=SGpu.{n}"])
                     for n in names}
            tests["starter.ch05.NOT_BUILT.other"] = (["ch05", "starter"], ["/nonexistent/other"])
            res = {r.name.split(".")[-1]: r for r in
                   lt.run_by_executable(Path(tmp), [], Path(tmp) / "xml", 2, tests=tests)}
            self.assertEqual({k: v.status for k, v in res.items()},
                             {"Ok": "passed", "Fail": "failed", "Skip": "skipped", "Crash": "failed",
                              "After": "failed", "other": "failed"})
            self.assertIn("Actual: 2", res["Fail"].output)
            self.assertEqual(gl.skip_reason(res["Skip"].output), "needs compute capability 9.0")
            self.assertIn("before reporting", res["Crash"].output)
            v = gl.judge("5.1", lt.to_cases([r for k, r in res.items() if k != "other"]))
            self.assertEqual((v.state, v.failed, v.skipped), ("failing", 3, 1))
            lt.write_junit(list(res.values()), Path(tmp) / "j.xml")
            self.assertIn("Actual: 2", (Path(tmp) / "j.xml").read_text())
