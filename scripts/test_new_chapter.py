#!/usr/bin/env python3
"""Tests of scripts/new_chapter.py, the skeleton every new chapter starts from (no build, no GPU):
what it writes must already follow the house rules, since every chapter copies it.

    python3 scripts/test_new_chapter.py
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "new_chapter.py"
sys.path.insert(0, str(ROOT / "scripts"))
import report  # noqa: E402  (where a chapter's benchmark declarations live)


def cuda_include() -> Path | None:
    for base in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if base and (Path(base) / "include" / "cuda_runtime_api.h").is_file():
            return Path(base) / "include"
    return None


class NewChapter(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="cudalab-new-chapter-"))
        for d in ("chapters", "tests"):
            (cls.tmp / d).mkdir()
        shutil.copy(ROOT / ".clang-format", cls.tmp / ".clang-format")
        r = subprocess.run([sys.executable, str(SCRIPT), "42", "demo", "--root", str(cls.tmp)],
                           capture_output=True, text=True, timeout=120)
        cls.rc, cls.out = r.returncode, r.stdout + r.stderr
        cls.bench = cls.tmp / "bench" / "ch42" / "demo.cpp"

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_writes_the_chapter(self):
        self.assertEqual(self.rc, 0, self.out)
        for rel in ("chapters/42_demo/README.md", "chapters/42_demo/reference/scale.cu",
                    "chapters/42_demo/starter/scale.cu", "tests/ch42", "bench/ch42/CMakeLists.txt",
                    "bench/ch42/ch42.toml", "bench/ch42/demo.cpp"):
            self.assertTrue((self.tmp / rel).exists(), rel)
        # bench/ is laid out like tests/: a folder per chapter, nothing loose beside the folders
        self.assertEqual(sorted(p.name for p in (self.tmp / "bench").iterdir()), ["ch42"])

    def test_bench_cmake_builds_the_chapters_topic_files(self):
        cmake = (self.tmp / "bench" / "ch42" / "CMakeLists.txt").read_text()
        self.assertIn("lab_bench(ch42 demo.cpp)", cmake)

    def test_refuses_a_chapter_that_exists(self):
        r = subprocess.run([sys.executable, str(SCRIPT), "42", "other", "--root", str(self.tmp)],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("exists already", r.stderr)

    def test_bench_rows_are_added_checked_and_timed_beside_their_ceiling(self):
        text = self.bench.read_text()
        self.assertNotIn("BENCHMARK(", text, "rows are registered with bench::add, the one way")
        self.assertIn("bench::verify(", text, "a row checks its result before it is timed")
        self.assertIn("bench::run_vs(", text, "a kernel row is timed beside its ceiling")

    def test_toml_names_rows_the_bench_registers(self):
        names = set(re.findall(r'add\("([^"]+)"', self.bench.read_text()))
        self.assertTrue(names)
        decl = tomllib.loads(report.declarations_path("ch42", self.tmp / "bench").read_text())
        for r in decl["ratio"]:
            for key in ("row", "vendor"):
                self.assertTrue(any(re.search(r[key], n) for n in names), f"{key} {r[key]}: {names}")

    def test_sources_are_clang_formatted(self):
        exe = shutil.which("clang-format")
        if exe is None:
            self.skipTest("clang-format is not installed")
        # Starter files are generated and left out of the format check (labtools.format_targets).
        files = [p for p in self.tmp.rglob("*") if p.suffix in (".cu", ".cpp", ".hpp")
                 and "starter" not in p.parts]
        self.assertTrue(files)
        for f in files:
            r = subprocess.run([exe, "--dry-run", "--Werror", str(f)], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, f"{f.relative_to(self.tmp)}:\n{r.stderr[:2000]}")

    def test_bench_compiles(self):
        cxx = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")
        inc = cuda_include()
        if cxx is None or inc is None:
            self.skipTest("no C++ compiler or no CUDA headers here")
        probe = subprocess.run([cxx, "-std=c++20", "-fsyntax-only", "-x", "c++", "-"],
                               input="#include <benchmark/benchmark.h>\n", capture_output=True, text=True)
        if probe.returncode != 0:
            self.skipTest("Google Benchmark's headers are not installed")
        r = subprocess.run([cxx, "-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-Wshadow", "-Werror",
                            f"-I{self.tmp / 'chapters' / '42_demo' / 'include'}",
                            f"-I{ROOT / 'common' / 'include'}", "-isystem", str(inc), str(self.bench)],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])



class OneWayToRegisterARow(unittest.TestCase):
    """Every benchmark row of the tree is added by bench::add (cudalab/bench.hpp: manual time and a
    unit), as the new-chapter skeleton writes it: no BENCHMARK macro, no direct RegisterBenchmark."""

    def test_the_chapters_benchmarks_register_through_bench_add(self):
        files = sorted(p for p in (ROOT / "bench").rglob("*") if p.suffix in (".cpp", ".cu"))
        self.assertTrue(files)
        other = re.compile(r"\bBENCHMARK(_CAPTURE|_TEMPLATE\w*)?\s*\(|\bRegisterBenchmark\s*\(")
        for f in files:
            code = re.sub(r"//[^\n]*", "", f.read_text())  # comments may name the macros
            rel = f.relative_to(ROOT).as_posix()
            with self.subTest(file=rel):
                self.assertIsNone(other.search(code), f"{rel}: a row registered outside bench::add")

if __name__ == "__main__":
    unittest.main()
