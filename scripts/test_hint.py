#!/usr/bin/env python3
"""Unit tests of hint.py and of the hints files (no GPU, no build): python3 scripts/test_hint.py"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hint  # noqa: E402

SCRIPT = Path(__file__).resolve().parent / "hint.py"

GOOD = """# Exercise 9.1 — a toy

## Level 1 — idea

IDEA

## Level 2 — structure

STRUCTURE

## Level 3 — near-code

NEARCODE

## Stretch

STRETCH
"""


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)


class TheRepository(unittest.TestCase):
    """Every exercise region of a reference file has a hints file with all four sections."""

    def test_every_exercise_region_has_a_complete_hints_file(self):
        regions = hint.exercises_in_reference()
        self.assertTrue(regions, "no '// BEGIN EXERCISE' region found under chapters/*/reference")
        files = hint.hint_files()
        for ex, chapter in sorted(regions.items(), key=lambda kv: hint.exercise_key(kv[0])):
            with self.subTest(exercise=ex):
                self.assertIn(ex, files, f"exercise {ex} has no {chapter.name}/hints/{ex}.md")
                self.assertEqual(files[ex].parent.parent, chapter,
                                 f"hints of {ex} are not in its chapter {chapter.name}")
                self.assertEqual(hint.missing_sections(files[ex].read_text()), [])

    def test_no_hints_file_without_an_exercise(self):
        regions = hint.exercises_in_reference()
        for ex, path in hint.hint_files().items():
            with self.subTest(file=str(path)):
                self.assertIn(ex, regions, f"{path} has no exercise region in a reference file")

    def test_hints_file_is_in_the_chapter_of_its_number(self):
        for ex, path in hint.hint_files().items():
            with self.subTest(exercise=ex):
                self.assertEqual(int(path.parent.parent.name[:2]), hint.exercise_key(ex)[0])


class Render(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        hints = self.root / "chapters" / "09_toy" / "hints"
        hints.mkdir(parents=True)
        (hints / "9.1.md").write_text(GOOD)
        (hints / "9.2.md").write_text(GOOD.replace("## Stretch\n\nSTRETCH\n", ""))

    def tearDown(self):
        self.tmp.cleanup()

    def test_levels_accumulate_and_stretch_stands_alone(self):
        one = hint.render("9.1", "1", self.root)
        self.assertIn("IDEA", one)
        self.assertNotIn("STRUCTURE", one)
        self.assertIn("scripts/lab hint 9.1 2", one)
        three = hint.render("9.1", "3", self.root)
        for word in ("IDEA", "STRUCTURE", "NEARCODE"):
            self.assertIn(word, three)
        self.assertNotIn("STRETCH", three)
        stretch = hint.render("9.1", "stretch", self.root)
        self.assertIn("STRETCH", stretch)
        self.assertNotIn("IDEA", stretch)

    def test_solution_notes_where_they_exist(self):
        notes = self.root / "chapters" / "09_toy" / "solutions"
        notes.mkdir()
        (notes / "9.1.md").write_text("# 9.1 design\n\nDESIGN\n")
        self.assertIn("DESIGN", hint.render("9.1", "solution", self.root))
        self.assertNotIn("IDEA", hint.render("9.1", "solution", self.root))
        missing = hint.render("9.2", "solution", self.root)
        self.assertIn("No solution notes for 9.2", missing)

    def test_every_solution_note_names_an_exercise_with_hints(self):
        files = hint.hint_files()
        for chapter in hint.chapter_dirs():
            for md in sorted((chapter / "solutions").glob("*.md")):
                if md.stem.startswith("study-"):  # a study question's answer, named by its README
                    with self.subTest(note=str(md)):
                        readme = (chapter / "README.md").read_text()
                        self.assertIn(f"solutions/{md.name}", readme)
                    continue
                with self.subTest(note=str(md)):
                    self.assertIn(md.stem, files)
                    self.assertEqual(files[md.stem].parent.parent, chapter)

    def test_unknown_exercise_names_the_known_ones(self):
        with self.assertRaises(hint.HintError) as e:
            hint.render("9.7", "1", self.root)
        self.assertIn("no hints for exercise 9.7", str(e.exception))
        self.assertIn("9.1 9.2", str(e.exception))

    def test_bad_ids_and_levels_are_refused(self):
        for ex, level, words in (("6", "1", "not an exercise id"), ("9.1", "4", "unknown level"),
                                 ("9.1", "idea", "unknown level")):
            with self.subTest(ex=ex, level=level):
                with self.assertRaises(hint.HintError) as e:
                    hint.render(ex, level, self.root)
                self.assertIn(words, str(e.exception))

    def test_incomplete_file_is_reported(self):
        with self.assertRaises(hint.HintError) as e:
            hint.render("9.2", "1", self.root)
        self.assertIn("'## Stretch'", str(e.exception))


class Cli(unittest.TestCase):
    def test_default_level_is_one(self):
        ex = sorted(hint.hint_files(), key=hint.exercise_key)[0]
        r = run(ex)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("## Level 1 — idea", r.stdout)
        self.assertNotIn("## Level 2", r.stdout)

    def test_level_three_prints_three_levels(self):
        r = run("6.2", "3")
        self.assertEqual(r.returncode, 0, r.stderr)
        for s in hint.SECTIONS[:3]:
            self.assertIn(f"## {s}", r.stdout)
        self.assertNotIn("## Stretch", r.stdout)

    def test_unknown_exercise_and_level_exit_2_with_one_clear_line(self):
        r = run("99.9")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, "")
        self.assertRegex(r.stderr.strip(), r"^hint: no hints for exercise 99\.9: exercises with hints are \d+\.\d+ ")
        r = run("6.2", "9")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown level '9'", r.stderr)

    def test_list(self):
        r = run("--list")
        self.assertEqual(r.returncode, 0)
        self.assertIn("6.2", r.stdout.split())


if __name__ == "__main__":
    unittest.main()
