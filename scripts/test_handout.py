"""The handout is a product: a fresh one of this tree (scripts/lab handout) passes its own check
(no solution, no instructor file, every exercise region marked), every link of its README, docs/
and chapter READMEs resolves inside it, its README points to the student guide and to nothing it
lacks, and it carries what grading needs (scripts/report.py, the pristine starter copies)."""
from __future__ import annotations

import re
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import handout  # noqa: E402
import labtools as lt  # noqa: E402
import regions  # noqa: E402


class FreshHandout(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="cudalab-handout-test-"))
        cls.out = cls.tmp / "handout"
        cls.out.mkdir()
        cls.written = handout.write(lt.ROOT, cls.out)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_its_own_check_passes(self):
        self.assertEqual(handout.check(lt.ROOT, self.out), [])

    def test_links_resolve_inside(self):
        self.assertEqual(handout.broken_links(self.out, lt.ROOT), [])

    def test_readme_is_the_students(self):
        readme = (self.out / "README.md").read_text()
        self.assertIn("docs/student-guide.md", readme)
        self.assertTrue((self.out / "docs/student-guide.md").is_file())
        for lacking in ("docs/instructors.md", "reference/", "pitfall", "full-tree", "handout-only"):
            self.assertFalse(lacking in readme, f"the handout's README mentions {lacking}")
        gs = (self.out / "docs/getting-started.md").read_text()
        for lacking in ("instructors.md", "pitfall:ch03", "full-tree", "handout-only"):
            self.assertNotIn(lacking, gs)

    def test_the_full_readme_keeps_its_instructor_parts(self):
        full = handout.full_markdown((lt.ROOT / "README.md").read_text())
        self.assertIn("docs/instructors.md", full)
        self.assertNotIn("This is your copy of the lab", full)

    def test_what_grading_needs_is_there(self):
        for rel in ("scripts/report.py", "scripts/gradelib.py", "scripts/labtools.py", "scripts/regions.py",
                    "scripts/grade", "scripts/lab", "scripts/hint.py", "scripts/grading.toml"):
            self.assertTrue((self.out / rel).is_file(), rel)
        for rel in ("scripts/gpu_acceptance", "scripts/gpu_suite", "scripts/variants.py", "docs/instructors.md"):
            self.assertFalse((self.out / rel).exists(), rel)
        self.assertFalse(list(self.out.glob("*.whl")))

    def test_every_starter_file_shows_its_regions(self):
        for rel in self.written:
            if not handout.is_starter_file(rel):
                continue
            ref = lt.ROOT / rel.replace("/starter/", "/reference/", 1)
            want = [r.exercise for r in regions.parse(ref.read_text())[1]] if ref.exists() else []
            text = (self.out / rel).read_text()
            with self.subTest(rel):
                self.assertEqual([r.exercise for r in regions.parse(text)[1]], want)
                self.assertEqual(bool(want), "// BEGIN HELPERS" in text)
                self.assertEqual((self.out / handout.PRISTINE / rel).read_text(), text)
                # an untouched handout file splices back to the committed starter, untouched
                if want:
                    spliced, rep = regions.splice_file(ref.read_text(), (lt.ROOT / rel).read_text(), text, rel)
                    self.assertEqual({r.status for r in rep}, {"untouched"})
                    self.assertEqual(spliced.rstrip("\n"), (lt.ROOT / rel).read_text().rstrip("\n"))

    def test_its_commands_answer_without_a_traceback(self):
        import subprocess
        for cmd, want in ((["scripts/lab", "--help"], 0), (["scripts/grade", "--help"], 0),
                          (["scripts/lab", "hint", "05.1"], 0), (["scripts/lab", "handout", str(self.tmp / "x")], 2),
                          (["scripts/lab", "gpu-suite", str(self.tmp / "y")], 2), (["scripts/grade", "--track", "reference"], 2),
                          (["scripts/lab", "check", "42.1"], 2)):
            with self.subTest(cmd=cmd):
                p = subprocess.run([sys.executable, *cmd], cwd=self.out, capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, want, p.stdout + p.stderr)
                self.assertNotIn("Traceback", p.stderr)
        self.assertFalse((self.tmp / "x").exists() or (self.tmp / "y").exists())

    def test_apps_link_the_track_that_exists(self):
        # an app or tool linked to <ch>_reference by hand would stop the handout's first build
        for cm in sorted((lt.ROOT / "chapters").glob("*/CMakeLists.txt")):
            text = cm.read_text()
            for m in re.finditer(r"target_link_libraries\((\w+)[^)]*\b(ch\d\d_reference)\b", text):
                # allowed inside `if(TARGET chNN_reference)`: an instructor's tool that needs that
                # chapter's solutions and is left out of a handout
                opened = text.rfind(f"if(TARGET {m.group(2)}", 0, m.start())
                if opened >= 0 and text.count("endif()", opened, m.start()) == 0:
                    continue
                self.fail(f"{cm.relative_to(lt.ROOT)}: {m.group(1)} links a reference library; use lab_app()")


class Rules(unittest.TestCase):
    def test_instructor_files_are_left_out(self):
        for rel in ("chapters/06_libraries/reference/sgemm_3_tiled.cu", "chapters/06_libraries/solutions/6.2.md",
                    "chapters/06_libraries/mutants.toml", "docs/instructors.md"):
            with self.subTest(rel=rel):
                self.assertTrue(handout.excluded(rel))
        for rel in ("chapters/06_libraries/starter/sgemm_3_tiled.cu", "chapters/06_libraries/hints/6.2.md",
                    "chapters/06_libraries/README.md"):
            with self.subTest(rel=rel):
                self.assertFalse(handout.excluded(rel))

    def test_check_refuses_solution_notes(self):
        with tempfile.TemporaryDirectory() as root, tempfile.TemporaryDirectory() as out:
            (Path(root) / "chapters").mkdir()
            notes = Path(out) / "chapters" / "06_libraries" / "solutions"
            notes.mkdir(parents=True)
            (notes / "6.2.md").write_text("# the design\n")
            problems = handout.check(Path(root), Path(out))
            self.assertTrue(any("solutions/" in p and "instructor folder" in p for p in problems), problems)
            self.assertTrue(any("6.2.md: instructor file" in p for p in problems), problems)


if __name__ == "__main__":
    unittest.main()
