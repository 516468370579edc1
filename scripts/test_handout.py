#!/usr/bin/env python3
"""Unit tests of handout.py's file rules (no git, no build): python3 scripts/test_handout.py"""
from __future__ import annotations

import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import handout  # noqa: E402


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
