#!/usr/bin/env python3
"""Unit tests of scripts/variants.py (no build, no GPU): python3 scripts/test_variants.py"""
from __future__ import annotations

import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import variants as v  # noqa: E402

REF = textwrap.dedent("""\
    #include "helper.cuh"
    int f(int n) {
      // BEGIN EXERCISE 9.1
      // TODO(9.1): return n + 1.
      // STARTER: throw 1;
      // BEGIN PITFALL off_by_one EXERCISES 9.1
      // Off by one: the lesson.
      return n + 1;
      // BUG: return n;
      // END PITFALL
      // END EXERCISE
    }
    int g(int n) {
      // BEGIN PITFALL wrong_sign EXERCISES 9.2 RACE
      // The lesson of g.
      // Caught by: nothing in particular.
      int r = -n;
      return r;
      // BUG: int r = n;
      // BUG: return r;
      // END PITFALL
    }
    """)
HELPER = textwrap.dedent("""\
    #pragma once
    // BEGIN EXERCISE 9.2
    // TODO(9.2): h.
    inline int h(int n) { return 2 * n; }
    // END EXERCISE
    """)


class Chapter:
    """A throwaway chapter 09_demo with a reference/ folder."""

    def __init__(self, files: dict[str, str], mutants: str | None = None):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name) / "09_demo"
        (self.dir / "reference").mkdir(parents=True)
        for name, text in files.items():
            (self.dir / "reference" / name).write_text(text)
        if mutants is not None:
            (self.dir / "mutants.toml").write_text(mutants)

    def __enter__(self) -> Path:
        return self.dir

    def __exit__(self, *exc) -> None:
        self.tmp.cleanup()


class StarterTest(unittest.TestCase):
    def test_exercise_region_drops_solution_and_inner_pitfall(self):
        text, exercises = v.transform(REF, "f.cu")
        self.assertEqual(exercises, ["9.1"])
        self.assertIn("// TODO(9.1): return n + 1.", text)
        self.assertIn("  throw 1;", text)
        self.assertNotIn("return n + 1;", text)
        self.assertNotIn("Off by one", text, "a pitfall inside an exercise goes with the solution")

    def test_pitfall_outside_exercise_keeps_correct_code_and_lesson(self):
        text, _ = v.transform(REF, "f.cu")
        self.assertIn("int r = -n;", text)
        self.assertIn("// The lesson of g.", text)
        self.assertNotIn("BUG", text)
        self.assertNotIn("PITFALL", text)

    def test_missing_todo_is_an_error(self):
        with self.assertRaises(v.MarkerError):
            v.transform("// BEGIN EXERCISE 1.1\nx;\n// END EXERCISE\n", "x.cu")


class PitfallTest(unittest.TestCase):
    def test_regions_become_variants(self):
        with Chapter({"f.cu": REF, "helper.cuh": HELPER}) as d:
            pits = {p.name: p for p in v.pitfalls(d)}
        self.assertEqual(sorted(pits), ["off_by_one", "wrong_sign"])
        obo = pits["off_by_one"]
        self.assertEqual((obo.exercises, obo.race), (("9.1",), False))
        self.assertIn("  return n;\n", obo.files["f.cu"])
        self.assertNotIn("return n + 1;", obo.files["f.cu"])
        self.assertIn("int r = -n;", obo.files["f.cu"], "other pitfalls keep their correct code")
        ws = pits["wrong_sign"]
        self.assertTrue(ws.race)
        self.assertIn("  int r = n;\n  return r;\n", ws.files["f.cu"])

    def test_malformed_regions(self):
        bad = {
            "no BUG line": "// BEGIN PITFALL a EXERCISES 1.1\n// lesson\nx;\n// END PITFALL\n",
            "no lesson": "// BEGIN PITFALL a EXERCISES 1.1\nx;\n// BUG: y;\n// END PITFALL\n",
            "no END": "// BEGIN PITFALL a EXERCISES 1.1\n// lesson\nx;\n// BUG: y;\n",
            "no EXERCISES": "// BEGIN PITFALL a\n// lesson\nx;\n// BUG: y;\n// END PITFALL\n",
            "code after BUG": "// BEGIN PITFALL a EXERCISES 1.1\n// lesson\n// BUG: y;\nx;\n// END PITFALL\n",
            "stray BUG": "x;\n// BUG: y;\n",
        }
        for why, text in bad.items():
            with self.subTest(why), self.assertRaises(v.MarkerError):
                v.parse_pitfalls(text, "x.cu", "x.cu")

    def test_header_variant_brings_its_includers(self):
        pit = "// BEGIN PITFALL twice EXERCISES 9.2\n// lesson\nconst int k = 1;\n// BUG: const int k = 2;\n// END PITFALL\n"
        files = {"h.cuh": pit, "a.cu": '#include "h.cuh"\n', "b.cu": '#include "other.hpp"\n',
                 "other.hpp": '#include "h.cuh"\n', "c.cu": "int c;\n"}
        with Chapter(files) as d:
            (p,) = v.pitfalls(d)
            out, compiled = v.variant_sources(d, p)
        self.assertEqual(compiled, ["a.cu", "b.cu"])
        self.assertEqual(sorted(out), ["a.cu", "b.cu", "h.cuh", "other.hpp"])
        self.assertIn("const int k = 2;", out["h.cuh"])


class MutantTest(unittest.TestCase):
    def toml(self, find: str, name: str = "m1") -> str:
        return (f'[[mutant]]\nname = "{name}"\nexercise = "9.1"\nfind = "{find}"\n'
                'replace = "return n - 1;"\nrace = true\nwhy = "test"\n')

    def test_find_exactly_once(self):
        with Chapter({"f.cu": REF}, self.toml("return n + 1;")) as d:
            (m,) = v.mutants(d)
        self.assertEqual((m.kind, m.exercises, m.race), ("mutant", ("9.1",), True))
        self.assertIn("return n - 1;", m.files["f.cu"])

    def test_find_missing_or_repeated_is_an_error(self):
        for find in ("not there", "n"):
            with self.subTest(find), Chapter({"f.cu": REF}, self.toml(find)) as d:
                with self.assertRaises(v.MarkerError):
                    v.mutants(d)

    def test_duplicate_names_are_an_error(self):
        toml = self.toml("return n + 1;") + self.toml("int r = -n;")
        with Chapter({"f.cu": REF}, toml) as d, self.assertRaises(v.MarkerError):
            v.mutants(d)


class ConfigureTest(unittest.TestCase):
    def test_manifest_and_sources(self):
        with Chapter({"f.cu": REF, "helper.cuh": HELPER}, MutantTest().toml("return n + 1;")) as d:
            out = d.parent / "out"
            (out / "pitfall_gone").mkdir(parents=True)
            (out / "pitfall_gone" / "stale.cu").write_text("stale")
            v.configure(d, out)
            manifest = (out / "variants.cmake").read_text()
            self.assertIn("lab_variant(ch09 pitfall off_by_one EXERCISES 9.1 DIR", manifest)
            self.assertIn("lab_variant(ch09 pitfall wrong_sign EXERCISES 9.2 RACE DIR", manifest)
            self.assertIn("lab_variant(ch09 mutant m1 EXERCISES 9.1 RACE DIR", manifest)
            self.assertIn("SOURCES f.cu)", manifest)
            self.assertTrue((out / "pitfall_off_by_one" / "f.cu").read_text().startswith("// Generated"))
            self.assertFalse((out / "pitfall_gone").exists(), "a removed variant's folder is cleaned up")


class RepositoryTest(unittest.TestCase):
    def test_repository_markers_are_well_formed(self):
        for d in v.chapters():
            v.generate(d)
            for p in v.pitfalls(d) + v.mutants(d):
                self.assertEqual(v.check_exercises(d, p), [], f"{d.name}: {p.kind} {p.name}")


if __name__ == "__main__":
    unittest.main()
