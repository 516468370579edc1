"""Grading survives a student's mistakes (scripts/labtools.py): a starter file that does not compile
is found in a keep-going build's output with its first error, and replaced by its pristine version
in a scratch copy of the tree, never in the tree; a test process that crashes or hangs fails the
case it was running, and the other cases run again; Gradescope's results.json has its fields."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
import labtools as lt  # noqa: E402

NINJA = """\
[1/9] Building CUDA object chapters/05_patterns/CMakeFiles/ch05_starter_scan_3_lookback_cu.dir/starter/scan_3_lookback.cu.o
FAILED: chapters/05_patterns/CMakeFiles/ch05_starter_scan_3_lookback_cu.dir/starter/scan_3_lookback.cu.o
ccache /usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -Werror=all-warnings -c ../../chapters/05_patterns/starter/scan_3_lookback.cu
../../chapters/05_patterns/starter/scan_3_lookback.cu(131): error: identifier "vv" is undefined
1 error detected in the compilation of "../../chapters/05_patterns/starter/scan_3_lookback.cu".
[2/9] Building CXX object chapters/03_first_kernels/CMakeFiles/ch03_starter_launch_config_cpp.dir/starter/launch_config.cpp.o
FAILED: chapters/03_first_kernels/CMakeFiles/ch03_starter_launch_config_cpp.dir/starter/launch_config.cpp.o
/usr/bin/c++ -Wall -Werror -c ../../chapters/03_first_kernels/starter/launch_config.cpp
In file included from ../../chapters/03_first_kernels/starter/launch_config.cpp:3:
../../chapters/03_first_kernels/starter/helpers.hpp:7:3: error: 'uint32_t' does not name a type
[3/9] Linking CXX executable tests/ch04/starter_ch04_test_x
ninja: build stopped: subcommands failed.
"""


class CompileFailures(unittest.TestCase):
    def test_failed_starter_sources(self):
        got = lt.failed_starter_sources(NINJA.splitlines())
        self.assertEqual(got["chapters/05_patterns/starter/scan_3_lookback.cu"],
                         'chapters/05_patterns/starter/scan_3_lookback.cu(131): error: identifier "vv" is undefined')
        self.assertIn("'uint32_t' does not name a type", got["chapters/03_first_kernels/starter/launch_config.cpp"])
        # the header named by the error is replaced too: its includers fail with it
        self.assertIn("chapters/03_first_kernels/starter/helpers.hpp", got)
        self.assertEqual(len(got), 3)

    def test_not_a_starter_failure(self):
        out = ["FAILED: tests/ch05/CMakeFiles/ch05_test_scan_obj.dir/test_scan.cpp.o", "c++ ...", "x: error: y"]
        self.assertEqual(lt.failed_starter_sources(out), {})

    def test_scratch_tree_replaces_in_the_copy_only(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "tree"
            (root / "chapters/05_x/starter").mkdir(parents=True)
            (root / "build/ci").mkdir(parents=True)
            mine = root / "chapters/05_x/starter/a.cu"
            mine.write_text("broken(\n")
            (root / "chapters/05_x/starter/b.cu").write_text("fine\n")
            (root / "build/ci/big.o").write_text("object")
            with mock.patch.object(sys.modules["cudalab.build"], "ROOT", root):  # scratch_tree's module
                dest = lt.scratch_tree({"chapters/05_x/starter/a.cu": "pristine\n"})
                self.assertEqual((dest / "chapters/05_x/starter/a.cu").read_text(), "pristine\n")
                self.assertEqual((dest / "chapters/05_x/starter/b.cu").read_text(), "fine\n")
                self.assertFalse((dest / "build/ci/big.o").exists())
                self.assertEqual(mine.read_text(), "broken(\n")  # the student's file, untouched
                # a second call leaves unchanged files as they were (ninja rebuilds nothing) and
                # drops files that left the tree
                b = dest / "chapters/05_x/starter/b.cu"
                os.utime(b, (1, 1))
                (root / "chapters/05_x/starter/b.cu").unlink()
                (root / "chapters/05_x/starter/c.cu").write_text("new\n")
                lt.scratch_tree({"chapters/05_x/starter/a.cu": "pristine\n"})
                self.assertFalse(b.exists())
                self.assertTrue((dest / "chapters/05_x/starter/c.cu").exists())

    def test_pristine_copy_of_a_handout(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            p = root / lt.PRISTINE_DIR / "chapters/05_x/starter/a.cu"
            p.parent.mkdir(parents=True)
            p.write_text("// BEGIN EXERCISE 5.4\nreturn 0;\n// END EXERCISE 5.4\n")
            self.assertEqual(lt.pristine_text("chapters/05_x/starter/a.cu", root), p.read_text())
            self.assertEqual(lt.exercises_of_file("chapters/05_x/starter/a.cu", root), ["5.4"])
            self.assertIsNone(lt.pristine_text("chapters/05_x/starter/none.cu", root))


# A GoogleTest stand-in: prints RUN/OK lines as GoogleTest does, writes its XML only when it ends
# normally (as GoogleTest does), crashes on a case named Crash, hangs on Hang.
FAKE = r'''#!/usr/bin/env python3
import os, signal, sys, time
out = next(a.split("xml:", 1)[1] for a in sys.argv if a.startswith("--gtest_output=xml:"))
cases = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--gtest_filter=")).split(":")
rows = []
for c in cases:
    suite, name = c.split(".", 1)
    print(f"[ RUN      ] {c}", flush=True)
    if name.startswith("Crash"):
        os.kill(os.getpid(), signal.SIGSEGV)
    if name == "Hang":
        time.sleep(60)
    body = '<failure message="m">t.cpp:3\nExpected: 1</failure>' if name == "Fail" else ""
    print(f"[       OK ] {c}" if not body else f"[  FAILED  ] {c}", flush=True)
    rows.append(f'<testcase name="{name}" classname="{suite}" result="completed" time="0.01">{body}</testcase>')
open(out, "w").write('<testsuites><testsuite name="s">' + "".join(rows) + "</testsuite></testsuites>")
sys.exit(1 if body else 0)
'''


class CrashesAndHangs(unittest.TestCase):
    def run_fake(self, names: list[str], timeout: str = "900"):
        with tempfile.TemporaryDirectory() as tmp:
            exe = Path(tmp) / "fake_test"
            exe.write_text(FAKE)
            exe.chmod(0o755)
            tests = {f"starter.ch05.SGpu.{n}": (["ch05", "starter", "ex:5.1" if n != "After" else "ex:5.2", "gpu"],
                                                [str(exe), f"--gtest_filter=SGpu.{n}"]) for n in names}
            with mock.patch.dict(os.environ, {"CUDALAB_TEST_TIMEOUT": timeout}):
                res = lt.run_by_executable(Path(tmp), [], Path(tmp) / "xml", 2, tests=tests)
            return {r.name.split(".")[-1]: r for r in res}

    def test_a_crash_fails_its_case_and_the_others_still_run(self):
        res = self.run_fake(["Ok", "Crash", "Fail", "Crash2", "After"])
        self.assertEqual({k: v.status for k, v in res.items()},
                         {"Ok": "passed", "Crash": "failed", "Fail": "failed", "Crash2": "failed", "After": "passed"})
        self.assertIn("crashed (signal SIGSEGV)", res["Crash"].output)
        self.assertIn("Expected: 1", res["Fail"].output)

    def test_a_hang_is_stopped_and_the_others_still_run(self):
        res = self.run_fake(["Ok", "Hang", "After"], timeout="2")
        self.assertEqual({k: v.status for k, v in res.items()}, {"Ok": "passed", "Hang": "failed", "After": "passed"})
        self.assertIn("timed out after 2 s", res["Hang"].output)

    def test_last_running_case(self):
        self.assertEqual(lt.last_running_case("[ RUN      ] A.x\n[       OK ] A.x (1 ms)\n[ RUN      ] A.y\n"), "A.y")
        self.assertIsNone(lt.last_running_case("[ RUN      ] A.x\n[  FAILED  ] A.x (1 ms)\n"))


def load_grade():
    loader = importlib.machinery.SourceFileLoader("grade_script", str(lt.ROOT / "scripts" / "grade"))
    spec = importlib.util.spec_from_loader("grade_script", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


class GradescopeResults(unittest.TestCase):
    def test_fields(self):
        grade = load_grade()
        rows = [{"exercise": "5.4", "chapter": "ch05", "points": 2.0, "score": 2.0, "state": "done", "graded": True,
                 "passed": 9, "failed": 0, "needs": [], "first_failure": "",
                 "speed": {"label": "scan", "goal": 0.8, "ratio": 0.93, "met": True, "points": 1.0, "score": 1.0}},
                {"exercise": "5.5", "chapter": "ch05", "points": 1.0, "score": 0.0, "state": "failing", "graded": True,
                 "passed": 0, "failed": 0, "needs": [], "first_failure": "does not compile: x.cu(3): error: y",
                 "speed": None}]
        t = {"score": 2.0, "possible_points": 3.0}
        r = grade.gradescope(rows, t, 1.0, 1.0, True, "GPU 0: H200")
        json.dumps(r)
        self.assertEqual((r["score"], r["max_score"]), (3.0, 4.0))
        for test in r["tests"]:
            self.assertTrue({"name", "score", "max_score", "output"} <= set(test))
        self.assertEqual([x["name"] for x in r["tests"]], ["exercise 5.4", "exercise 5.4 speed (scan)", "exercise 5.5"])
        self.assertIn("does not compile", r["tests"][2]["output"])

    def test_overrides(self):
        grade = load_grade()
        import gradelib as gl
        vs = [gl.Verdict("5.4", "ch05", 1.0, passed=3, state="done", graded=True, score=1.0),
              gl.Verdict("5.5", "ch05", 1.0, passed=3, state="done", graded=True, score=1.0),
              gl.Verdict("5.6", "ch05", 1.0, passed=3, state="done", graded=True, score=1.0)]
        grade.apply_overrides(vs, {"chapters/05_x/starter/a.cu": {"error": "chapters/05_x/starter/a.cu(3): error: y",
                                                                  "exercises": ["5.5"]}},
                              {"5.6": ["a.cu: the marks were deleted"]})
        self.assertEqual([(v.state, v.score) for v in vs], [("done", 1.0), ("failing", 0.0), ("needs review", 0.0)])
        self.assertIn("error: y", vs[1].first_failure)
        self.assertIn("marks were deleted", vs[2].first_failure)


if __name__ == "__main__":
    unittest.main()
