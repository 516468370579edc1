#!/usr/bin/env python3
"""Unit tests of report.py and results.py (no GPU, no build needed): python3 scripts/test_report.py

Ratios (median of repetitions, spread, parity, goals), ladders, the bench/chNN/chNN.toml declarations
(and, when a build directory holds the bench executables, that every declared regex matches a row
they register), the README block rewriting, and the idempotence of scripts/results.py: on a copy
of the tree with a fixture run, and on the committed tree itself.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import report  # noqa: E402
import results  # noqa: E402
from test_goals import toml_goals  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def declared_goal(exercise: str) -> float:
    """The goal bench/chNN/chNN.toml declares for an exercise (its one owner)."""
    return toml_goals()[exercise][0]


def run(rows: list[tuple[str, str, list[dict]]], gpu: str = "NVIDIA H200", date: str = "2026-12-01T03:04:05+00:00") -> dict:
    """A Google Benchmark JSON: rows = (name, label, one counters dict per repetition)."""
    bench = []
    for name, label, reps in rows:
        for i, counters in enumerate(reps):
            b = {"name": f"{name}/manual_time", "run_name": f"{name}/manual_time", "run_type": "iteration",
                 "repetitions": len(reps), "repetition_index": i, "label": label, **counters}
            bench.append(b)
        bench.append({"name": f"{name}/manual_time_median", "run_name": f"{name}/manual_time",
                      "run_type": "aggregate", "aggregate_name": "median", "GB/s": -1.0})
    return {"context": {"gpu": gpu, "date": date}, "benchmarks": bench}


def decl(**kw) -> dict:
    d = {"label": "x", "row": "^A$", "vendor": "^V$", "metric": "GB/s"}
    d.update(kw)
    return d


class Throttle(unittest.TestCase):
    def test_a_row_is_flagged_when_its_clock_dropped_or_a_slowdown_reason_was_set(self):
        steady = {"median_us": 10.0, "sm_mhz_before": 1980, "sm_mhz_after": 1980, "clock_reasons_before": 0,
                  "clock_reasons_after": 0}
        self.assertEqual(report.throttle_flag([steady]), "")
        # idle (0x1) and sync boost (0x10) are not slowdowns
        self.assertEqual(report.throttle_flag([{**steady, "clock_reasons_before": 0x11}]), "")
        self.assertEqual(report.throttle_flag([{**steady, "clock_reasons_after": 0x4}]), "SwPowerCap")
        self.assertEqual(report.throttle_flag([steady, {**steady, "sm_mhz_after": 1755}]),
                         "SM clock 1980 -> 1755 MHz")
        self.assertEqual(report.throttle_flag([{**steady, "sm_mhz_after": 1900}]), "")  # within 5 %
        both = report.throttle_flag([{**steady, "clock_reasons_after": 0x60, "sm_mhz_after": 1200}])
        self.assertEqual(both, "SwThermalSlowdown,HwThermalSlowdown; SM clock 1980 -> 1200 MHz")
        self.assertEqual(report.throttle_flag([{"median_us": 1.0}]), "")  # a JSON without NVML

    def test_the_table_shows_the_flag_and_hides_the_raw_counters(self):
        data = run([("A", "", [{"median_us": 5.0, "GB/s": 1.0, "sm_mhz_before": 1980, "sm_mhz_after": 1410,
                                "clock_reasons_before": 0, "clock_reasons_after": 0x4}]),
                    ("B", "", [{"median_us": 5.0, "GB/s": 1.0, "sm_mhz_before": 1980, "sm_mhz_after": 1980,
                                "clock_reasons_before": 0, "clock_reasons_after": 0}])])
        table = report.chapter_table("ch99", data)
        line_a = next(x for x in table.splitlines() if x.startswith("| A "))
        line_b = next(x for x in table.splitlines() if x.startswith("| B "))
        self.assertIn("1410 THROTTLED: SwPowerCap; SM clock 1980 -> 1410 MHz |", line_a)
        self.assertNotIn("THROTTLED", line_b)
        self.assertNotIn("clock_reasons", table)


class Ratios(unittest.TestCase):
    def test_interleaved_rows_give_the_median_and_spread_of_their_vs_base(self):
        data = run([("A", "", [{"GB/s": 9.0, "vs_base": r} for r in (0.90, 0.95, 0.93, 0.80, 0.99)]),
                    ("V", "", [{"GB/s": 10.0}] * 5)])
        r = report.ratio_result(decl(), data)
        self.assertAlmostEqual(r["ratio"], 0.93)
        self.assertEqual((r["lo"], r["hi"], r["n"]), (0.80, 0.99, 5))
        self.assertTrue(r["interleaved"])
        self.assertFalse(r["parity"])
        self.assertIn("0.93x (0.80..0.99, n = 5, interleaved; A vs V)", r["text"])

    def test_a_spread_that_includes_one_reads_parity(self):
        data = run([("A", "", [{"vs_base": r} for r in (0.98, 1.01, 1.03)]), ("V", "", [{}] * 3)])
        r = report.ratio_result(decl(), data)
        self.assertTrue(r["parity"])
        self.assertTrue(r["text"].startswith("parity: 1.01x"))

    def test_separate_rows_pair_up_by_repetition_index(self):
        data = run([("A", "", [{"GB/s": v} for v in (8.0, 9.0, 4.0)]),
                    ("V", "", [{"GB/s": v} for v in (10.0, 10.0, 5.0)])])
        r = report.ratio_result(decl(), data)
        self.assertEqual([r["lo"], r["ratio"], r["hi"]], [0.8, 0.8, 0.9])
        self.assertFalse(r["interleaved"])

    def test_separate_true_ignores_a_vs_base_against_another_row(self):
        data = run([("A", "", [{"GB/s": 8.0, "vs_base": 0.5}]), ("V", "", [{"GB/s": 4.0}])])
        self.assertAlmostEqual(report.ratio_result(decl(separate=True), data)["ratio"], 2.0)
        self.assertAlmostEqual(report.ratio_result(decl(), data)["ratio"], 0.5)

    def test_no_vendor_row_no_ratio_even_with_a_vs_base(self):
        # A JSON older than the declaration: the row's vs_base was against another baseline.
        data = run([("A", "", [{"GB/s": 8.0, "vs_base": 0.5}])])
        r = report.ratio_result(decl(), data)
        self.assertIsNone(r["ratio"])
        self.assertIn("rows missing", r["text"])

    def test_time_metric_compares_speeds(self):
        data = run([("A", "", [{"median_us": 100.0}]), ("V", "", [{"median_us": 250.0}])])
        self.assertAlmostEqual(report.ratio_result(decl(metric="time"), data)["ratio"], 2.5)

    def test_the_best_matching_row_counts(self):
        data = run([("A/1", "", [{"vs_base": 0.5}]), ("A/2", "", [{"vs_base": 0.9}]), ("V", "", [{}])])
        r = report.ratio_result(decl(row="^A/"), data)
        self.assertEqual((r["row"], r["ratio"]), ("A/2", 0.9))

    def test_a_wrong_result_is_never_a_number(self):
        err = {"error_occurred": True, "error_message": "wrong result: sum got 3, want 4"}
        data = run([("A", "", [dict(err)] * 5), ("V", "", [{"GB/s": 10.0}] * 5)])
        r = report.ratio_result(decl(), data)
        self.assertIsNone(r["ratio"])
        self.assertIn("wrong result: sum got 3", r["text"])
        self.assertIn("error: wrong result", report.chapter_table("ch99", data))

    def test_goals_are_met_or_missed_on_the_median(self):
        data = run([("A", "", [{"vs_base": r} for r in (0.79, 0.81, 0.82)]), ("V", "", [{}] * 3)])
        self.assertTrue(report.ratio_result(decl(exercise="9.9", goal=0.8), data)["met"])
        missed = report.ratio_result(decl(exercise="9.9", goal=0.85), data)
        self.assertFalse(missed["met"])
        self.assertIn("goal 9.9 >= 0.85x: MISSED", missed["text"])

    def test_an_errored_vendor_row_is_named(self):
        data = run([("A", "", [{"GB/s": 1.0}]), ("V", "", [{"error_occurred": True, "error_message": "built without cuDNN"}])])
        self.assertIn("V: built without cuDNN", report.ratio_result(decl(), data)["text"])

    def test_missing_rows_are_said_so(self):
        self.assertIn("rows missing", report.ratio_result(decl(), run([]))["text"])


class LadderTables(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp())
        (self.dir / "ch99").mkdir()
        report.declarations_path("ch99", self.dir).write_text('''
[[ladder]]
title = "SGEMM"
step = "^BM_sgemm/(?P<step>\\\\w+)/(?P<size>\\\\d+)$"
vendor = "^BM_sgemm_cublas/{size}$"
metric = "TFLOP/s"

[[ladder]]
title = "Reduce"
step = "^BM_reduce/(?P<step>\\\\w+)$"
vendor = "^BM_reduce_cub$"
metric = "GB/s"
''')

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_each_step_is_beside_the_vendor_of_its_own_size_or_its_interleaved_base(self):
        data = run([("BM_sgemm_cublas/4096", "", [{"TFLOP/s": 50.0}] * 3),
                    ("BM_sgemm/naive/4096", "", [{"TFLOP/s": 0.5}, {"TFLOP/s": 0.6}, {"TFLOP/s": 0.4}]),
                    ("BM_sgemm/warptile/4096", "", [{"TFLOP/s": 44.0, "vs_base": 0.88}] * 3),
                    ("BM_sgemm/warptile/1024", "", [{"TFLOP/s": 16.0}]),
                    ("BM_sgemm/warptile/4095", "", [{"TFLOP/s": 38.0}]),
                    ("BM_reduce/one_pass", "", [{"GB/s": 4400.0, "vs_base": 1.01}]),
                    ("BM_reduce_cub", "", [{"GB/s": 4300.0}])])
        text = "\n".join(report.ladder_tables("ch99", data, self.dir))
        self.assertIn("| step | 1024 | 4095 | 4096 |", text)  # sizes sorted as numbers
        self.assertIn("| naive |  |  | 0.50 (1.0%) |", text)  # median of the repetitions
        self.assertIn("| warptile | 16.00 | 38.00 | 44.00 (88.0%) |", text)  # no cuBLAS row at 1024, 4095
        self.assertIn("| step | GB/s |", text)  # a ladder without sizes: one column
        self.assertIn("| one_pass | 4400.00 (101.0%) |", text)

    def test_a_chapter_without_ladders_adds_nothing(self):
        self.assertEqual(report.ladder_tables("ch98", run([]), self.dir), [])


def listed_rows(exe: Path) -> list[str]:
    out = subprocess.run([str(exe), "--benchmark_list_tests"], capture_output=True, text=True, timeout=60)
    return [re.sub(r"/(manual_time|real_time)$", "", line.strip()) for line in out.stdout.splitlines() if line.strip()]


class Declarations(unittest.TestCase):
    def test_every_chapter_declares_valid_ratios_and_goals(self):
        chapters = report.declared_chapters()
        # every chapter with a benchmark executable (bench/chNN/CMakeLists.txt) declares its ratios
        self.assertEqual(chapters, sorted(p.parent.name for p in (ROOT / "bench").glob("ch[0-9][0-9]/CMakeLists.txt")))
        self.assertIn("ch06", chapters)
        exercises = []
        for ch in chapters:
            d = report.load_declarations(ch)
            self.assertTrue(d["ratio"], ch)
            for r in d["ratio"]:
                re.compile(r["row"]), re.compile(r["vendor"])
                if "goal" in r:
                    self.assertTrue(r["exercise"].startswith(ch[2:].lstrip("0") + "."), r["label"])
                    self.assertGreater(r["goal"], 0)
                    self.assertIn(f"({r['exercise']})", r["label"], "the label names the exercise")
                    exercises.append(r["exercise"])
        self.assertEqual(len(exercises), len(set(exercises)), "one goal per exercise")
        self.assertEqual(set(report.goals()), set(exercises))

    def test_declared_rows_exist_in_the_built_benchmarks(self):
        exes = {p.name: p for p in sorted((ROOT / "build").glob("*/bench/bench_ch[0-9][0-9]")) if p.is_file()}
        if not exes:
            self.skipTest("no bench executables under build/ (configure and build a preset first)")
        for name, exe in exes.items():
            chapter = name.removeprefix("bench_")
            names = listed_rows(exe)
            self.assertTrue(names, f"{exe} --benchmark_list_tests listed nothing")
            d = report.load_declarations(chapter)
            for r in d["ratio"]:
                # A multi-GPU row (gpus:K) is registered for the GPUs found (every K without a
                # GPU, so CI checks all the names); on a GPU machine with another count it has none.
                k = re.search(r"gpus:(\d+)", r["row"])
                if k and not any(f"gpus:{k.group(1)}/" in n for n in names):
                    continue
                for key in ("row", "vendor"):
                    self.assertTrue(any(re.search(r[key], n) for n in names), f"{chapter} {r['label']}: {key} {r[key]}")
            for lad in d["ladder"]:
                self.assertTrue(any(re.match(lad["step"], n) for n in names), f"{chapter} {lad['title']}")


    def test_a_bench_executable_without_a_gpu_says_so_and_exits_0(self):
        exes = sorted(p for p in (ROOT / "build").glob("*/bench/bench_ch[0-9][0-9]") if p.is_file())
        if not exes:
            self.skipTest("no bench executables under build/")
        for exe in exes:
            proc = subprocess.run([str(exe), "--benchmark_filter=^$"], capture_output=True, text=True, timeout=120)
            self.assertEqual(proc.returncode, 0, f"{exe}: {proc.stdout}{proc.stderr}")
            out = proc.stdout + proc.stderr
            if "nothing to measure" not in out:  # a GPU is there: Google Benchmark ran, matching no row
                self.assertTrue("Run on" in out or "Failed to match any benchmarks" in out, f"{exe}: {out}")


class Blocks(unittest.TestCase):
    def test_a_block_is_replaced_between_its_markers_and_nothing_else_changes(self):
        text = "intro\n<!-- results:ch05 begin -->\nold 1.00x\n<!-- results:ch05 end -->\noutro 42\n"
        new = results.replace_block(text, "ch05", "new line\n")
        self.assertEqual(new, "intro\n<!-- results:ch05 begin -->\nnew line\n<!-- results:ch05 end -->\noutro 42\n")
        self.assertEqual(results.replace_block(new, "ch05", "new line"), new)
        self.assertIsNone(results.replace_block(text, "ch06", "x"))

    def test_gpu_directory_names(self):
        self.assertEqual(results.gpu_slug("NVIDIA H200"), "H200")
        self.assertEqual(results.gpu_slug("NVIDIA H100 80GB HBM3"), "H100_80GB_HBM3")


class Regenerate(unittest.TestCase):
    """results.py on a copy of the tree: a fixture run in docs/results/raw/H200/."""

    def setUp(self):
        self.root = Path(tempfile.mkdtemp())
        shutil.copytree(ROOT / "bench", self.root / "bench", ignore=shutil.ignore_patterns("*.cpp", "*.cu", "*.hpp"))
        shutil.copy(ROOT / "README.md", self.root / "README.md")
        for readme in (ROOT / "chapters").glob("*/README.md"):
            dest = self.root / readme.relative_to(ROOT)
            dest.parent.mkdir(parents=True)
            shutil.copy(readme, dest)
        (self.root / "docs").mkdir()
        shutil.copy(ROOT / "docs/instructors.md", self.root / "docs/instructors.md")
        self.suite_out = self.root / "suite" / "bench"
        self.suite_out.mkdir(parents=True)
        (self.suite_out / "bench_ch05.json").write_text(json.dumps(run([
            ("BM_reduce_sum/one_pass", "", [{"GB/s": 4480.0, "vs_base": v} for v in (1.00, 1.01, 0.99, 1.02, 1.00)]),
            ("BM_reduce_sum_cub", "", [{"GB/s": 4440.0}] * 5),
            ("BM_scan_int/decoupled_lookback", "", [{"GB/s": 2840.0, "vs_base": v} for v in (0.92, 0.93, 0.93, 0.94, 0.91)]),
            ("BM_scan_int_cub", "", [{"GB/s": 3060.0}] * 5),
            ("BM_histogram/privatized/skewed/256", "", [{"error_occurred": True, "error_message": "wrong result: bin 3"}] * 5),
            ("BM_histogram_cub/skewed/256", "", [{"GB/s": 1545.0}] * 5),
        ])))

    def tearDown(self):
        shutil.rmtree(self.root)

    def regenerate(self) -> dict[Path, str]:
        tree = results.Tree(self.root)
        files = results.outputs(tree, None, plots=False)
        for p, text in files.items():
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        return files

    def test_import_then_regenerate_is_idempotent_and_names_the_gpu_and_date(self):
        tree = results.Tree(self.root)
        [dest] = results.import_jsons(tree, self.suite_out)
        self.assertEqual(dest, self.root / "docs/results/raw/H200/bench_ch05.json")
        first = self.regenerate()
        second = results.outputs(tree, None, plots=False)
        self.assertEqual(first, second)
        for p, text in second.items():
            self.assertEqual(p.read_text(), text, p)
        ch05 = (self.root / "chapters/05_patterns/README.md").read_text()
        self.assertIn("Measured on NVIDIA H200 on 2026-12-01", ch05)
        self.assertIn("| decoupled look-back scan (5.4) / CUB DeviceScan::InclusiveSum, 2^28 int | 0.93x | "
                      "0.91..0.94 (5 reps, interleaved) | 5.4: >= 0.80x, met |", ch05)
        self.assertIn("| best reduction / CUB DeviceReduce::Sum, 2^28 floats | parity (1.00x) |", ch05)
        self.assertIn("not measured | BM_histogram/privatized/skewed/256: wrong result: bin 3", ch05)
        self.assertIn("../../docs/results/H200.md", ch05)
        top = (self.root / "README.md").read_text()
        self.assertIn("on NVIDIA H200 on 2026-12-01", top)
        self.assertIn("| 05 | decoupled look-back scan (5.4)", top)
        self.assertIn("| 06 | best SGEMM / cuBLAS SGEMM (FP32, no TF32), 4096^3 | not measured yet | |", top)
        self.assertIn("| step | GB/s |\n| --- | ---: |\n| one_pass | 4480.00 (100.0%) |", ch05)  # block ch05-reduce
        reduce_block = results.block_re("ch05-reduce").search(ch05).group(1)
        self.assertIn("Measured on NVIDIA H200 on 2026-12-01", reduce_block)
        self.assertIn("| int |", results.block_re("ch05-scan").search(ch05).group(1))
        goals = results.block_re("goals").search((self.root / "docs/instructors.md").read_text()).group(1)
        self.assertIn("| 5.4 | decoupled look-back scan (5.4) / CUB DeviceScan::InclusiveSum, 2^28 int | 0.80x | "
                      "0.93x, 0.91..0.94 (5 reps, interleaved) |", goals)
        self.assertIn(f"| 6.2 | 2D block-tiled SGEMM (6.2) / cuBLAS SGEMM, 4096^3 | {declared_goal('6.2'):.2f}x | "
                      "not measured yet |", goals)
        self.assertLess(goals.index("| 5.4 |"), goals.index("| 5.10 |"))  # exercises in numeric order
        full = (self.root / "docs/results/H200.md").read_text()
        self.assertIn("# Results on NVIDIA H200 (2026-12-01)", full)
        self.assertIn("docs/results/raw/H200/bench_ch05.json", full)

    def test_a_chapter_the_primary_gpu_has_no_run_of_shows_another_gpus_run_named(self):
        tree = results.Tree(self.root)
        results.import_jsons(tree, self.suite_out)  # ch05 on the H200 (the primary)
        other = self.root / "suite_h100"
        other.mkdir()
        (other / "bench_ch02.json").write_text(json.dumps(run([
            ("BM_fma_f32/ilp:8/warps:4", "", [{"TFLOP/s": 60.0}]),
            ("BM_sgemm_cublas/8192", "", [{"TFLOP/s": 50.0}]),
        ], gpu="NVIDIA H100 80GB HBM3", date="2026-12-06T08:00:00+00:00")))
        results.import_jsons(tree, other)
        self.regenerate()
        ch02 = (self.root / "chapters/02_architecture/README.md").read_text()
        block = results.block_re("ch02").search(ch02).group(1)
        self.assertIn("Measured on NVIDIA H100 80GB HBM3 on 2026-12-06", block)
        self.assertIn("../../docs/results/H100_80GB_HBM3.md", block)
        self.assertIn("| 1.20x |", block)
        ch05 = (self.root / "chapters/05_patterns/README.md").read_text()
        self.assertIn("Measured on NVIDIA H200 on 2026-12-01", ch05)  # the primary keeps its chapters
        top = (self.root / "README.md").read_text()
        self.assertIn("on NVIDIA H200 on 2026-12-01", top)  # the intro names the primary's run
        self.assertIn("| 02 | FMA kernel, fp32, 8 chains, 4 warps/SM (2.1) / cuBLAS SGEMM 8192^3 (FP32 cores) | "
                      "1.20x (on NVIDIA H100 80GB HBM3) |", top)
        goals = results.block_re("goals").search((self.root / "docs/instructors.md").read_text()).group(1)
        self.assertIn("1.20x, 1.20..1.20 (1 reps, separate rows) (on NVIDIA H100 80GB HBM3)", goals)

    def test_without_raw_json_the_blocks_hold_no_measured_number(self):
        self.regenerate()
        ch06 = (self.root / "chapters/06_libraries/README.md").read_text()
        block = results.block_re("ch06").search(ch06).group(1)
        self.assertIn("No measured results are committed yet", block)
        self.assertNotRegex(block, r"\| (parity \()?\d+\.\d+x\)? \|")  # a measured median cell
        self.assertIn(f"| 6.2: >= {declared_goal('6.2'):.2f}x |", block)  # the goals are declarations, shown
        ladder = results.block_re("ch06-sgemm").search(ch06).group(1)
        self.assertIn("No measured results are committed yet", ladder)
        self.assertNotRegex(ladder, r"\d+\.\d+ \(\d+\.\d+%\)")  # a measured ladder cell

    def test_a_declared_ladder_block_without_markers_is_an_error(self):
        readme = self.root / "chapters/05_patterns/README.md"
        readme.write_text(results.block_re("ch05-reduce").sub("", readme.read_text()))
        with self.assertRaises(SystemExit) as err:
            results.outputs(results.Tree(self.root), None, plots=False)
        self.assertIn("ch05-reduce", str(err.exception))

    def test_a_ladder_block_name_is_checked(self):
        self.assertEqual(results.ladder_key("ch06", {"title": "t", "block": "sgemm"}), "ch06-sgemm")
        self.assertIsNone(results.ladder_key("ch06", {"title": "t"}))
        with self.assertRaises(ValueError):
            results.ladder_key("ch06", {"title": "t", "block": "SGEMM ladder"})


class CommittedTree(unittest.TestCase):
    def test_the_committed_results_are_what_results_py_writes(self):
        tree = results.Tree(ROOT)
        files = results.outputs(tree, None, plots=False)
        stale = [str(p.relative_to(ROOT)) for p, text in files.items() if p.read_text() != text]
        self.assertEqual(stale, [], "run scripts/results.py (and commit) after changing bench/*.toml, "
                                    "docs/results/raw/ or a README result block")
        for key in ["summary", "ch03", "ch04", "ch05", "ch06", "ch04-transpose", "ch05-reduce", "ch05-scan",
                    "ch06-sgemm", "ch06-tc_gemm", "goals"]:
            self.assertTrue(any(results.block_re(key).search(t) for t in files.values()), f"no block {key}")


if __name__ == "__main__":
    unittest.main()
