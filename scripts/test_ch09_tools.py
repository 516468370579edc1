#!/usr/bin/env python3
"""Unit tests of chapter 9's GPU-side tools on recorded or synthetic outputs (no GPU):
tools/sancheck.py (does a compute-sanitizer report name the planted bug's class and kernel; is a
run clean), and the table of cases against apps/hunt.cpp's.

    python3 scripts/test_ch09_tools.py
"""
from __future__ import annotations

import importlib.util
import re
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "chapters/09_profiling/tools"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"ch09_{name}", TOOLS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


sancheck = load("sancheck")

MEMCHECK_OOB = """========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at cudalab::ch09::<unnamed>::shift_kernel(const float *, float *, unsigned long)+0x90 in hunt_01_shift.cu:25
=========     by thread (231,0,0) in block (3,0,0)
=========     Address 0x7f3a4e000fa0 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f3a4e000000 of size 4000 bytes
case shift: right answer: n = 1000 matched
========= ERROR SUMMARY: 1 error
"""
CLEAN = "========= COMPUTE-SANITIZER\ncase shift: right answer: n = 1000 matched\n========= ERROR SUMMARY: 0 errors\n"
RACE = """========= Error: Race reported between Write access at cudalab::ch09::<unnamed>::neighbor_diff_kernel(const float *, float *, unsigned long)+0x80 in hunt_03_neighbor_diff.cu:28
=========     and Read access at cudalab::ch09::<unnamed>::neighbor_diff_kernel(const float *, float *, unsigned long)+0x120 in hunt_03_neighbor_diff.cu:36 [248 hazards]
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""


class Sancheck(unittest.TestCase):
    def test_a_report_with_the_class_and_the_kernel_is_found(self):
        v = sancheck.judge_found(sancheck.CASES["shift"], 99, MEMCHECK_OOB)
        self.assertTrue(v.ok, v.why)
        self.assertIn("shift_kernel", v.why)

    def test_a_report_of_another_kernel_or_class_is_not_found(self):
        other = MEMCHECK_OOB.replace("shift_kernel", "some_other_kernel")
        self.assertFalse(sancheck.judge_found(sancheck.CASES["shift"], 99, other).ok)
        self.assertFalse(sancheck.judge_found(sancheck.CASES["two_stage"], 99, MEMCHECK_OOB).ok)  # a read expected

    def test_a_clean_run_finds_nothing_and_a_missing_summary_is_never_clean(self):
        self.assertFalse(sancheck.judge_found(sancheck.CASES["shift"], 0, CLEAN).ok)
        self.assertTrue(sancheck.judge_clean("memcheck", 0, CLEAN).ok)
        self.assertFalse(sancheck.judge_clean("memcheck", 99, MEMCHECK_OOB).ok)
        self.assertFalse(sancheck.judge_clean("memcheck", None, "timed out after 240 s").ok)
        self.assertFalse(sancheck.judge_clean("memcheck", 1, CLEAN.replace("right answer", "WRONG ANSWER")).ok)

    def test_racecheck_hazards_count(self):
        self.assertTrue(sancheck.judge_found(sancheck.CASES["neighbor_diff"], 99, RACE).ok)
        self.assertFalse(sancheck.judge_clean("racecheck", 99, RACE).ok)

    def test_the_plain_run_case_is_found_by_its_wrong_answer(self):
        case = sancheck.CASES["readback"]
        out = "case readback: WRONG ANSWER: read before the copy ended: i = 0: got nan, want 0\n"
        self.assertTrue(sancheck.judge_found(case, 1, out).ok)
        self.assertFalse(sancheck.judge_found(case, 0, "case readback: right answer: n = 1024 matched\n").ok)
        self.assertTrue(sancheck.judge_clean("plain", 0, "").ok)

    def test_every_tool_of_a_case_is_one_the_runner_knows(self):
        for name, c in sancheck.CASES.items():
            self.assertIn(c.tool, ("memcheck", "leak", "racecheck", "synccheck", "initcheck", "plain"), name)
            re.compile(c.klass), re.compile(c.where)
        self.assertEqual(sancheck.tool_args("leak"), ["--tool", "memcheck", "--leak-check", "full"])
        self.assertEqual(sancheck.tool_args("plain"), [])

    def test_the_cases_are_those_of_hunt_cu_and_each_has_its_exercise_region(self):
        table = (ROOT / "chapters/09_profiling/reference/hunt.cu").read_text()
        self.assertEqual(re.findall(r'\{"(\w+)", hunt_\w+\}', table), list(sancheck.CASES))
        ref = ROOT / "chapters/09_profiling/reference"
        regions = {m for f in ref.glob("hunt_*.cu") for m in re.findall(r"BEGIN EXERCISE (\d+\.\d+)", f.read_text())}
        self.assertEqual(regions, {c.exercise for c in sancheck.CASES.values()})

    def test_usage_errors_exit_2(self):
        self.assertEqual(sancheck.main(["--case", "shift"]), 2)
        self.assertEqual(sancheck.main(["--exe", "/nonexistent", "--case", "shift", "--expect", "clean"]), 2)
        self.assertEqual(sancheck.main(["--exe", "/bin/true", "--case", "shift", "--expect", "found", "--all-tools"]), 2)


if __name__ == "__main__":
    unittest.main()
