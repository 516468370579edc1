#!/usr/bin/env python3
"""Unit tests of the GPU-free logic in labtools.py: how compute-sanitizer output is read and how
the GPU suite judges a pitfall. No GPU, no build needed:

    python3 scripts/test_labtools.py          (or: python3 -m unittest discover -s scripts)
"""
from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import labtools as lt  # noqa: E402

# Output shapes of compute-sanitizer (the "=========" prefix is its own).
RACE_HAZARDS = """\
========= COMPUTE-SANITIZER
[ RUN      ] Tiled/SgemmRaceGpu.RaceProneShapes/smem_tiled
========= Error: Race reported between Read access at sgemm_tiled_kernel(SgemmArgs)+0x2d0
=========     and Write access at sgemm_tiled_kernel(SgemmArgs)+0x1a0 [32768 hazards]
[  PASSED  ] 1 test.
========= RACECHECK SUMMARY: 12 hazards displayed (12 errors, 0 warnings)
"""
RACE_ONE = "========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)\n"
RACE_CLEAN = "[  PASSED  ] 40 tests.\n========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
MEM_CLEAN = "========= ERROR SUMMARY: 0 errors\n"
MEM_ONE = "========= Invalid __global__ read of size 4 bytes\n========= ERROR SUMMARY: 1 error\n"
COUNTS_PASS = {"passed": 244, "failed": 0, "skipped": 0}
COUNTS_FAIL = {"passed": 243, "failed": 1, "skipped": 0}


def racecheck(output: str, rc: int | None = 0, exe: str = "pitfall_x_ch06_test_sgemm") -> lt.SanitizerRun:
    return lt.parse_sanitizer(exe, "racecheck", rc, output)


class ParseSanitizer(unittest.TestCase):
    def test_racecheck_hazards_are_counted(self):
        r = racecheck(RACE_HAZARDS, rc=lt.SANITIZER_ERROR_EXITCODE)
        self.assertEqual(r.count, 12)
        self.assertTrue(r.found)
        self.assertFalse(r.clean)
        self.assertEqual(r.summary, "RACECHECK SUMMARY: 12 hazards displayed (12 errors, 0 warnings)")

    def test_one_hazard_singular_and_warnings_count(self):
        r = racecheck(RACE_ONE)
        self.assertEqual(r.count, 1)
        self.assertTrue(r.found)

    def test_racecheck_clean(self):
        r = racecheck(RACE_CLEAN)
        self.assertEqual(r.count, 0)
        self.assertTrue(r.clean)
        self.assertFalse(r.found)

    def test_clean_summary_with_failing_tests_is_still_clean(self):
        # gtest's own exit status 1 (a test failed) is not a sanitizer finding
        r = racecheck(RACE_CLEAN, rc=1)
        self.assertTrue(r.clean)
        self.assertFalse(r.found)

    def test_memcheck(self):
        self.assertTrue(lt.parse_sanitizer("e", "memcheck", 0, MEM_CLEAN).clean)
        r = lt.parse_sanitizer("e", "memcheck", lt.SANITIZER_ERROR_EXITCODE, MEM_ONE)
        self.assertEqual(r.count, 1)
        self.assertFalse(r.clean)

    def test_timeout_has_no_summary(self):
        r = racecheck("timed out after 900 s", rc=None)
        self.assertIsNone(r.count)
        self.assertFalse(r.clean)
        self.assertFalse(r.found)
        self.assertIn("timed out", r.summary)

    def test_error_exitcode_without_summary_is_a_finding(self):
        r = racecheck("output cut short\n", rc=lt.SANITIZER_ERROR_EXITCODE)
        self.assertIsNone(r.count)
        self.assertTrue(r.found)
        self.assertFalse(r.clean)


class JudgePitfall(unittest.TestCase):
    def test_plain_pitfall_caught_by_a_failing_test(self):
        v = lt.judge_pitfall(COUNTS_FAIL)
        self.assertTrue(v["caught"])
        self.assertEqual(v["caught_by"], ["tests (1 failed)"])
        self.assertFalse(v["race"])
        self.assertNotIn("racecheck", v)

    def test_plain_pitfall_not_caught(self):
        v = lt.judge_pitfall(COUNTS_PASS)
        self.assertFalse(v["caught"])
        self.assertEqual(v["caught_by"], [])

    def test_race_caught_by_racecheck_alone(self):
        # the intermittent case: the racy test passed this time, racecheck saw the hazard
        v = lt.judge_pitfall(COUNTS_PASS, race=True, racecheck=[racecheck(RACE_HAZARDS, 99)])
        self.assertTrue(v["caught"])
        self.assertEqual(v["caught_by"], ["racecheck (12 hazards)"])
        self.assertEqual(v["hazards"], 12)
        self.assertEqual(v["racecheck"], {"pitfall_x_ch06_test_sgemm":
                                          "RACECHECK SUMMARY: 12 hazards displayed (12 errors, 0 warnings)"})

    def test_race_caught_by_both(self):
        v = lt.judge_pitfall(COUNTS_FAIL, race=True,
                             racecheck=[racecheck(RACE_HAZARDS, 99, "a"), racecheck(RACE_ONE, 99, "b")])
        self.assertEqual(v["caught_by"], ["tests (1 failed)", "racecheck (13 hazards)"])

    def test_race_hazard_in_one_of_several_executables(self):
        v = lt.judge_pitfall(COUNTS_PASS, race=True,
                             racecheck=[racecheck(RACE_CLEAN, 0, "a"), racecheck(RACE_HAZARDS, 99, "b")])
        self.assertTrue(v["caught"])
        self.assertEqual(v["hazards"], 12)

    def test_race_neither_test_nor_hazard_is_not_caught(self):
        v = lt.judge_pitfall(COUNTS_PASS, race=True, racecheck=[racecheck(RACE_CLEAN)])
        self.assertFalse(v["caught"])
        self.assertTrue(any("no hazard" in n for n in v["notes"]))

    def test_race_caught_by_tests_while_racecheck_is_clean_is_caught_with_a_note(self):
        v = lt.judge_pitfall(COUNTS_FAIL, race=True, racecheck=[racecheck(RACE_CLEAN)])
        self.assertTrue(v["caught"])
        self.assertEqual(v["caught_by"], ["tests (1 failed)"])
        self.assertTrue(any("declared RACE" in n for n in v["notes"]))

    def test_race_racecheck_skipped(self):
        v = lt.judge_pitfall(COUNTS_PASS, race=True, racecheck=None, racecheck_note="--skip-sanitizer")
        self.assertFalse(v["caught"])
        self.assertIsNone(v["racecheck"])
        self.assertIn("racecheck not run (--skip-sanitizer)", v["notes"])
        self.assertTrue(lt.judge_pitfall(COUNTS_FAIL, race=True, racecheck=None)["caught"])

    def test_race_nothing_to_run(self):
        v = lt.judge_pitfall(COUNTS_PASS, race=True, racecheck=[])
        self.assertFalse(v["caught"])
        self.assertTrue(any("nothing to run" in n for n in v["notes"]))

    def test_race_racecheck_timed_out(self):
        v = lt.judge_pitfall(COUNTS_PASS, race=True, racecheck=[racecheck("timed out after 900 s", None)])
        self.assertFalse(v["caught"])
        self.assertTrue(any("did not finish" in n for n in v["notes"]))

    def test_race_exit_code_without_count(self):
        v = lt.judge_pitfall(COUNTS_PASS, race=True, racecheck=[racecheck("cut\n", 99)])
        self.assertTrue(v["caught"])
        self.assertTrue(v["caught_by"][0].startswith("racecheck (exit 99"))

    def test_counts_are_kept(self):
        v = lt.judge_pitfall({"passed": 3, "failed": 2, "skipped": 1})
        self.assertEqual((v["passed"], v["failed"], v["skipped"]), (3, 2, 1))
        self.assertEqual(lt.count_line(v), "3 passed, 2 failed, 1 skipped")

    def test_summary_lines(self):
        v = lt.judge_pitfall(COUNTS_PASS, race=True, racecheck=[racecheck(RACE_HAZARDS, 99)])
        self.assertEqual(lt.pitfall_line("ch06.missing_second_sync", v),
                         "ch06.missing_second_sync [race]: caught by racecheck (12 hazards) "
                         "(tests: 244 passed, 0 failed, 0 skipped)")
        self.assertEqual(lt.pitfall_line("ch03.floor_div_grid", lt.judge_pitfall({"passed": 3, "failed": 1, "skipped": 0})),
                         "ch03.floor_div_grid: caught by tests (1 failed) (tests: 3 passed, 1 failed, 0 skipped)")
        self.assertTrue(lt.pitfall_line("ch03.x", lt.judge_pitfall(COUNTS_PASS)).startswith("ch03.x: NOT CAUGHT"))


class RaceLabels(unittest.TestCase):
    def test_executables_of_race_pitfalls_only(self):
        sgemm = "/b/tests/ch06/pitfall_missing_second_sync_ch06_test_sgemm"
        tests = {
            "pitfall.ch06.missing_second_sync.A": (["ch06", "pitfall", "pitfall:ch06.missing_second_sync",
                                                    "ex:6.1", "race", "gpu"], [sgemm, "--gtest_filter=A"]),
            "pitfall.ch06.missing_second_sync.B": (["ch06", "pitfall", "pitfall:ch06.missing_second_sync",
                                                    "ex:6.1", "race", "cpu"], [sgemm, "--gtest_filter=B"]),
            # ctest -L race is a regular expression: this one matches it without being a race pitfall
            "pitfall.ch07.trace_lost.C": (["ch07", "pitfall", "pitfall:ch07.trace_lost", "gpu"],
                                          ["/b/tests/ch07/pitfall_trace_lost_ch07_test_t", "--gtest_filter=C"]),
        }
        self.assertEqual(lt.race_pitfall_executables(tests), {"ch06.missing_second_sync": [sgemm]})

    def test_test_result_race(self):
        self.assertTrue(lt.TestResult("t", ["pitfall", "pitfall:ch04.x", "race"], "passed").race)
        self.assertFalse(lt.TestResult("t", ["pitfall", "pitfall:ch04.trace"], "passed").race)


# ---------------------------------------------------------------------------------------------
# Mutants: the mutants.toml checks and the verdict of the mutation pass

def mutant(**kw) -> dict:
    m = {"name": "bound_le", "exercise": "3.2", "find": "if (i < n)", "replace": "if (i <= n)", "race": False,
         "why": "bound < to <="}
    m.update(kw)
    return m


TEXTS = {"reference/a.cu": "__global__ void k() {\n  if (i < n) c[i] = 1;\n  __syncthreads();  // x\n}\n",
         "reference/b.cu": "  __syncthreads();  // y\n"}


class MutantChecks(unittest.TestCase):
    def test_a_good_mutant_has_no_problem(self):
        self.assertEqual(lt.mutant_problems([mutant()], TEXTS), [])

    def test_find_must_occur_exactly_once_over_all_files(self):
        probs = lt.mutant_problems([mutant(find="__syncthreads();", replace="")], TEXTS, "03_x")
        self.assertEqual(len(probs), 1)
        self.assertIn("occurs 2 times", probs[0])
        self.assertIn("reference/a.cu x1", probs[0])
        self.assertIn("03_x: mutant bound_le", probs[0])
        self.assertIn("occurs 0 times", lt.mutant_problems([mutant(find="if (j < n)")], TEXTS)[0])

    def test_multi_line_find(self):
        m = mutant(find="c[i] = 1;\n  __syncthreads();  // x\n", replace="c[i] = 1;\n", race=True)
        self.assertEqual(lt.mutant_problems([m], TEXTS), [])

    def test_keys_names_and_exercise(self):
        probs = lt.mutant_problems([mutant(), mutant(exercise="3", race="no"), {"name": "Bad-Name"}], TEXTS)
        text = "\n".join(probs)
        self.assertIn("the name is used twice", text)
        self.assertIn("'race' missing or not a bool", text)
        self.assertIn("exercise '3' is not N.k", text)
        self.assertIn("lower_snake_case", text)
        self.assertIn("'find' missing", text)
        self.assertIn("replace' equals 'find'", "\n".join(lt.mutant_problems([mutant(replace="if (i < n)")], TEXTS)))

    def test_the_committed_mutants_are_valid(self):
        total = 0
        for d in sorted((lt.ROOT / "chapters").glob("[0-9][0-9]_*")):
            ms = lt.load_mutants(d)
            total += len(ms)
            self.assertEqual(lt.mutant_problems(ms, lt.reference_texts(d), d.name), [])
        self.assertGreaterEqual(total, 30)


class JudgeMutant(unittest.TestCase):
    def test_killed_by_a_failing_test(self):
        v = lt.judge_mutant({"passed": 10, "failed": 2, "skipped": 0})
        self.assertEqual((v["state"], v["killed"], v["killed_by"]), ("killed", True, ["tests (2 failed)"]))

    def test_survivor(self):
        self.assertEqual(lt.judge_mutant({"passed": 10, "failed": 0, "skipped": 1})["state"], "survived")

    def test_race_killed_by_racecheck_alone(self):
        v = lt.judge_mutant(COUNTS_PASS, race=True, racecheck=[racecheck(RACE_HAZARDS, lt.SANITIZER_ERROR_EXITCODE)])
        self.assertEqual(v["state"], "killed")
        self.assertEqual(v["killed_by"], ["racecheck (12 hazards)"])

    def test_race_survives_a_clean_racecheck(self):
        v = lt.judge_mutant(COUNTS_PASS, race=True, racecheck=[racecheck(RACE_CLEAN)])
        self.assertEqual(v["state"], "survived")
        self.assertIn("racecheck found no hazard", " ".join(v["notes"]))

    def test_not_built_is_neither_killed_nor_survived(self):
        v = lt.judge_mutant({"passed": 0, "failed": 0, "skipped": 0, "not_built": 3})
        self.assertEqual((v["state"], v["killed"]), ("not built", False))

    def test_all_skipped_is_not_run(self):
        self.assertEqual(lt.judge_mutant({"passed": 0, "failed": 0, "skipped": 7})["state"], "not run")

    def test_table_counts_not_built_apart(self):
        res = [lt.TestResult("mutant.ch03.a.X", ["ch03", "mutant", "mutant:ch03.a", "ex:3.2"], "failed"),
               lt.TestResult("mutant.ch03.a.Y", ["ch03", "mutant", "mutant:ch03.a"], "passed"),
               lt.TestResult("mutant.ch03.b.Z", ["ch03", "mutant", "mutant:ch03.b"], "failed",
                             "not a GoogleTest case: /b/x NOT_BUILT"),
               lt.TestResult("reference.ch03.Q", ["ch03", "reference"], "failed")]
        t = lt.mutant_table(res)
        self.assertEqual(t["ch03.a"], {"passed": 1, "failed": 1, "skipped": 0, "not_built": 0})
        self.assertEqual(t["ch03.b"], {"passed": 0, "failed": 0, "skipped": 0, "not_built": 1})
        self.assertEqual(set(t), {"ch03.a", "ch03.b"})

    def test_race_executables_match_the_label_exactly(self):
        exe = "/b/tests/ch05/mutant_ch05_reduce_seq_no_sync_ch05_test_reduce"
        tests = {"a": (["mutant", "mutant:ch05.reduce_seq_no_sync", "race", "gpu"], [exe, "--gtest_filter=A"]),
                 "b": (["mutant", "mutant:ch05.trace_x", "gpu"], ["/b/other", "--gtest_filter=B"])}
        self.assertEqual(lt.race_mutant_executables(tests), {"ch05.reduce_seq_no_sync": [exe]})
        # race = true in mutants.toml counts even without the label
        tests["c"] = (["mutant", "mutant:ch05.stencil_no_sync", "gpu"], ["/b/st", "--gtest_filter=C"])
        self.assertEqual(lt.race_mutant_executables(tests, {"ch05.stencil_no_sync"}),
                         {"ch05.reduce_seq_no_sync": [exe], "ch05.stencil_no_sync": ["/b/st"]})

    def test_score_and_lines(self):
        verdicts = {"ch03.a": lt.judge_mutant(COUNTS_FAIL), "ch03.b": lt.judge_mutant(COUNTS_PASS),
                    "ch03.c": lt.judge_mutant({"not_built": 1}), "ch03.d": lt.judge_mutant(COUNTS_FAIL)}
        sc = lt.mutation_score(verdicts)
        self.assertEqual((sc["killed"], sc["scored"], sc["survivors"]), (2, 3, ["ch03.b"]))
        self.assertAlmostEqual(sc["share"], 2 / 3)
        self.assertEqual(sc["unscored"], {"ch03.c": "not built"})
        self.assertIn("BELOW the goal of 95%", lt.score_line(sc))
        self.assertIn("survivors: ch03.b", lt.score_line(sc))
        self.assertIn("goal met", lt.score_line(lt.mutation_score({"x": verdicts["ch03.a"]})))
        self.assertEqual(lt.score_line(lt.mutation_score({})), "Mutants: none scored")
        self.assertTrue(lt.mutant_line("ch03.b", verdicts["ch03.b"]).startswith("ch03.b: SURVIVED"))
        self.assertTrue(lt.mutant_line("ch03.a", verdicts["ch03.a"]).startswith("ch03.a: killed by tests (1 failed)"))


if __name__ == "__main__":
    unittest.main()


class CacheValue(unittest.TestCase):
    """The GPU suite puts back the CUDALAB_MUTANTS it found, read from the build's cache."""

    def test_reads_the_entry_by_name_not_by_prefix(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            self.assertIsNone(lt.cache_value(Path(d), "CUDALAB_MUTANTS"))  # no cache at all
            (Path(d) / "CMakeCache.txt").write_text(
                "// comment\nCUDALAB_MUTANTS_EXTRA:BOOL=OFF\nCUDALAB_MUTANTS:BOOL=ON\n"
                "CMAKE_CUDA_FLAGS:STRING=-DX=1\n")
            self.assertEqual(lt.cache_value(Path(d), "CUDALAB_MUTANTS"), "ON")
            self.assertEqual(lt.cache_value(Path(d), "CMAKE_CUDA_FLAGS"), "-DX=1")
            self.assertIsNone(lt.cache_value(Path(d), "CUDALAB"))


class LabelRegex(unittest.TestCase):
    def test_exact_and_refuses_an_anchored_label(self):
        import re
        rx = lt.label_regex("ex:5.1")
        self.assertTrue(re.search(rx, "ex:5.1"))
        self.assertFalse(re.search(rx, "ex:5.10"))
        with self.assertRaises(ValueError):  # a label regex '^mutant$' matches no 'mutant:chNN.x' label
            lt.label_regex("^mutant$")


class FormatCheck(unittest.TestCase):
    def test_an_unformatted_file_is_named_and_a_formatted_one_is_not(self):
        import shutil
        import tempfile
        if shutil.which("clang-format") is None:
            self.skipTest("clang-format is not installed")
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            (root / ".clang-format").write_text((lt.ROOT / ".clang-format").read_text())
            (root / "bad.cpp").write_text("int  f( int x ){return x;}\n")
            (root / "good.cpp").write_text("int f(int x) {\n  return x;\n}\n")
            (root / "starter").mkdir()
            (root / "starter" / "gen.cpp").write_text("int  g( ){return 0;}\n")  # generated: not checked
            self.assertEqual(lt.format_problems(root), ["bad.cpp"])


class PlainTests(unittest.TestCase):
    """Tests that are not GoogleTest cases (the MPI launcher) run whole: exit 0 passes, a line
    'skipped: ...' skips, anything else fails; discovery placeholders stay failures."""

    def run_plain(self, code: str, name: str = "reference.ch08.plain") -> lt.TestResult:
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            tests = {name: (["ch08", "reference", "gpu"], [sys.executable, "-c", code])}
            res = lt.run_by_executable(Path(d), ["reference"], Path(d) / "xml", 2, tests=tests)
        self.assertEqual(len(res), 1)
        return res[0]

    def test_exit_zero_passes(self):
        self.assertEqual(self.run_plain("print('ok')").status, "passed")

    def test_skip_line_skips(self):
        r = self.run_plain("print('skipped: no GPU on some rank')")
        self.assertEqual((r.status, r.output), ("skipped", "skipped: no GPU on some rank"))

    def test_nonzero_exit_fails_with_output(self):
        r = self.run_plain("import sys; print('all-reduce sum wrong'); sys.exit(3)")
        self.assertEqual(r.status, "failed")
        self.assertIn("exited 3", r.output)
        self.assertIn("all-reduce sum wrong", r.output)

    def test_discovery_placeholders_stay_failures(self):
        r = self.run_plain("print('ok')", name="reference.ch05.NOT_BUILT.reference_ch05_test_scan")
        self.assertEqual(r.status, "failed")
        self.assertIn("not built", r.output)

    def test_plain_tests_are_not_run_in_a_suite_pass(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            tests = {"reference.ch08.plain": (["reference"], [sys.executable, "-c", "print('ok')"])}
            self.assertEqual(lt.run_by_executable(Path(d), ["reference"], Path(d) / "x", 1,
                                                  only_suite=lt.LARGE_SUITE, tests=tests), [])
