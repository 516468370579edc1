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
        rx = gl.ctest_label_regex("ex:5.1")
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

    def test_goals_from_toml(self):
        data = {"ratio": [{"label": "x", "row": "a", "vendor": "b", "metric": "GB/s"},
                          {"label": "y", "row": "c", "vendor": "d", "exercise": "5.4", "goal": 0.8}]}
        gs = gl.goals_from_toml("ch05", data)
        self.assertEqual([(g.exercise, g.goal) for g in gs], [("5.4", 0.8)])


if __name__ == "__main__":
    unittest.main()
