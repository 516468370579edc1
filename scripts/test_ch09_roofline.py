#!/usr/bin/env python3
"""Unit tests of chapters/09_profiling/tools/roofline.py and of its hook in scripts/results.py, on
fixture JSON (no GPU): the join of declared FLOPs/bytes with measured time, the binding roof, the
ridge point, rows without FLOPs, the source of each ceiling, [[roof]] declarations, and that the
README block is rewritten beside the chapter's other blocks.

    python3 scripts/test_ch09_roofline.py
"""
from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
import report  # noqa: E402
import results  # noqa: E402

_spec = importlib.util.spec_from_file_location("roofline", ROOT / "chapters/09_profiling/tools/roofline.py")
roofline = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(roofline)


def bench_json(rows: list[dict], context: dict | None = None) -> dict:
    """Google Benchmark JSON: each row dict has name and its counters; 3 repetitions each, the
    median_us given per repetition as `times` (an aggregate row that must be ignored follows)."""
    out = []
    for r in rows:
        times = r.pop("times")
        for i, t in enumerate(times):
            out.append({"name": r["name"] + "/manual_time", "run_name": r["name"] + "/manual_time",
                        "run_type": "iteration", "repetition_index": i, "median_us": t, **{k: v for k, v in r.items() if k != "name"}})
        out.append({"name": r["name"] + "/manual_time_median", "run_name": r["name"] + "/manual_time",
                    "run_type": "aggregate", "median_us": 1e-9, "flops": 1.0, "bytes": 1.0})
    ctx = {"gpu": "NVIDIA H200", "date": "2026-12-01T00:00:00+00:00", "peak_dram_GBps": "4000", "peak_fp32_TFLOPs": "60"}
    ctx.update(context or {})
    return {"context": ctx, "benchmarks": out}


class Tree:
    def __init__(self):
        self.root = Path(tempfile.mkdtemp())
        (self.root / "bench").mkdir()
        self.raw = self.root / "docs/results/raw/H200"
        self.raw.mkdir(parents=True)

    def write(self, chapter: str, data: dict, toml: str = "") -> None:
        (self.raw / f"bench_{chapter}.json").write_text(json.dumps(data))
        self.declare(chapter, toml)

    def declare(self, chapter: str, toml: str) -> None:
        path = report.declarations_path(chapter, self.root / "bench")
        path.parent.mkdir(exist_ok=True)
        path.write_text(toml)


class Place(unittest.TestCase):
    DRAM, FP32 = (4000.0, "sheet"), (60.0, "sheet")

    def test_ridge_point_is_compute_over_bandwidth(self):
        p = roofline.place(1e9, 1e9, 1000.0, self.FP32, self.DRAM)
        self.assertAlmostEqual(p["ridge"], 15.0)  # 60e12 / 4000e9

    def test_left_of_the_ridge_the_memory_roof_binds(self):
        # I = 0.25, attainable = 4000 GB/s x 0.25 = 1 TFLOP/s; 2.5e8 FLOP in 500 us = 0.5 TFLOP/s.
        p = roofline.place(2.5e8, 1e9, 500.0, self.FP32, self.DRAM)
        self.assertEqual(p["binds"], "memory")
        self.assertAlmostEqual(p["intensity"], 0.25)
        self.assertAlmostEqual(p["attainable"], 1.0)
        self.assertAlmostEqual(p["pct"], 50.0)
        self.assertAlmostEqual(p["gbps"], 2000.0)
        self.assertFalse(p["above"])

    def test_right_of_the_ridge_the_compute_roof_binds(self):
        # I = 100 > 15: attainable 60 TFLOP/s; 1e11 FLOP in 2500 us = 40 TFLOP/s.
        p = roofline.place(1e11, 1e9, 2500.0, self.FP32, self.DRAM)
        self.assertEqual(p["binds"], "compute")
        self.assertAlmostEqual(p["pct"], 100.0 * 40 / 60)

    def test_a_point_above_its_roof_is_flagged(self):
        p = roofline.place(2.5e8, 1e9, 200.0, self.FP32, self.DRAM)  # 5000 GB/s > 4000
        self.assertTrue(p["above"])

    def test_without_one_roof_no_binding_roof_and_no_percentage(self):
        p = roofline.place(1e11, 1e9, 2500.0, None, self.DRAM)
        self.assertIsNone(p["binds"])
        self.assertIsNone(p["pct"])
        self.assertIsNone(p["ridge"])


class Join(unittest.TestCase):
    def setUp(self):
        self.t = Tree()

    def tearDown(self):
        shutil.rmtree(self.t.root)

    def test_declared_counts_join_the_median_time_and_rows_without_flops_are_counted_apart(self):
        self.t.write("ch05", bench_json([
            {"name": "BM_reduce", "flops": 2.5e8, "bytes": 1e9, "times": [510.0, 500.0, 490.0]},
            {"name": "BM_copy", "bytes": 1e9, "times": [300.0, 300.0, 300.0]},
            {"name": "BM_broken", "flops": 1.0, "bytes": 1.0, "times": [1.0], "error_occurred": True},
        ]))
        r = roofline.join(self.t.root, "H200")
        [p] = r["points"]
        self.assertEqual(p["name"], "BM_reduce")
        self.assertEqual(p["time_us"], 500.0)  # the median of the repetitions, not the aggregate
        self.assertAlmostEqual(p["pct"], 50.0)
        self.assertEqual(r["bytes_only"], [("ch05", "BM_copy")])
        self.assertEqual(r["failed"], [("ch05", "BM_broken")])
        out = roofline.text(r, None)
        self.assertIn("1 row(s) declare bytes but no FLOPs", out)
        self.assertIn("BM_broken", out)
        self.assertIn("| 05 | BM_reduce | 0.25 | 0.5 | 2000 | fp32, dram | dram | 50.0% |", out)

    def test_a_roof_declaration_picks_the_tensor_roof_which_is_blank_until_measured(self):
        self.t.write("ch06", bench_json([
            {"name": "BM_tc_gemm/wmma_bf16/4096", "flops": 1.4e11, "bytes": 1e8, "times": [300.0] * 3},
            {"name": "BM_sgemm/naive/4096", "flops": 1.4e11, "bytes": 2e8, "times": [3e5] * 3},
        ]), toml='[[roof]]\nrow = "^BM_tc_gemm\\\\w*/\\\\w*bf16/"\ncompute = "tensor_bf16"\n')
        r = roofline.join(self.t.root, "H200")
        tc, naive = r["points"]
        self.assertEqual(tc["compute_roof"], "tensor_bf16")
        self.assertIsNone(tc["pct"])  # no measured tensor ceiling, none typed in
        self.assertEqual(naive["compute_roof"], "fp32")
        self.assertEqual(naive["binds"], "compute")
        out = roofline.text(r, None)
        self.assertIn("| tensor_bf16 | not measured |", out)
        self.assertIn("roof not measured", out)
        self.assertIn("sheet figure, not measured (bench JSON context `peak_dram_GBps`", out)

    def test_chapter_twos_card_is_preferred_and_named(self):
        self.t.write("ch06", bench_json([
            {"name": "BM_tc_gemm/wmma_bf16/4096", "flops": 1.4e11, "bytes": 1e8, "times": [300.0] * 3}]),
            toml='[[roof]]\nrow = "bf16"\ncompute = "tensor_bf16"\n')
        (self.t.raw / "ch02_card.json").write_text(json.dumps({"ceilings": {
            "dram_GBps": 4100.0, "l2_GBps": 9000.0, "fp32_TFLOPs": 50.0, "tensor_TFLOPs": {"bf16": 700.0}}}))
        r = roofline.join(self.t.root, "H200")
        self.assertEqual(r["ceilings"]["dram"][0], 4100.0)
        self.assertIn("chapter 2's measured card", r["ceilings"]["dram"][1])
        self.assertEqual(r["ceilings"]["tensor_bf16"][0], 700.0)
        [p] = r["points"]
        self.assertEqual(p["binds"], "compute")  # I = 1400 > 700e12 / 4100e9
        self.assertAlmostEqual(p["pct"], 100.0 * (1.4e11 / 300e-6 / 1e12) / 700.0)

    def test_chapter_twos_loader_is_used_for_a_card_and_never_without_one(self):
        # Without a committed card the loader is not called (it would need a built calculator, and
        # results.py depends on committed files only): the sheet figures of the bench JSON count.
        self.t.write("ch05", bench_json([{"name": "BM_reduce", "flops": 2.5e8, "bytes": 1e9, "times": [500.0] * 3}]))
        tools = self.t.root / "chapters/02_architecture/tools"
        tools.mkdir(parents=True)
        (tools / "card.py").write_text(
            "def load_ceilings(gpu, root):\n"
            "    import json\n"
            "    p = root / 'docs/results/raw' / gpu / 'ch02_card.json'\n"
            "    if not p.exists():\n"
            "        raise LookupError('no measured card and no built ch02_sheet')\n"
            "    return {'ceilings': json.loads(p.read_text())['ceilings'], 'measured': True, 'source': str(p)}\n")
        r = roofline.join(self.t.root, "H200")
        self.assertIn("sheet figure, not measured", r["ceilings"]["dram"][1])
        (self.t.raw / "ch02_card.json").write_text(json.dumps({"ceilings": {"dram_GBps": 4100.0, "fp32_TFLOPs": 50.0}}))
        r = roofline.join(self.t.root, "H200")
        self.assertEqual(r["ceilings"]["dram"], (4100.0, "chapter 2's measured card (docs/results/raw/H200/ch02_card.json)"))

    def test_an_invalid_roof_name_is_an_error_naming_it(self):
        self.t.write("ch06", bench_json([]), toml='[[roof]]\nrow = "x"\ncompute = "tensor_fp4"\n')
        with self.assertRaises(ValueError) as err:
            roofline.join(self.t.root, "H200")
        self.assertIn("compute must be one of", str(err.exception))


class Hook(unittest.TestCase):
    """results.outputs() writes the roofline files and the chapter 9 block beside its own blocks."""

    def setUp(self):
        self.t = Tree()
        readme = self.t.root / "chapters/09_profiling/README.md"
        readme.parent.mkdir(parents=True)
        readme.write_text("x\n<!-- results:ch09-roofline begin -->\n<!-- results:ch09-roofline end -->\n"
                          "<!-- results:ch09 begin -->\n<!-- results:ch09 end -->\n")
        self.t.write("ch05", bench_json([{"name": "BM_reduce", "flops": 2.5e8, "bytes": 1e9, "times": [500.0] * 3}]))
        self.t.declare("ch09", '[[ratio]]\nlabel = "a"\nrow = "^A$"\nvendor = "^B$"\nmetric = "GB/s"\n')

    def tearDown(self):
        shutil.rmtree(self.t.root)

    def test_results_writes_the_roofline_and_both_blocks_of_the_readme(self):
        files = results.outputs(results.Tree(self.t.root), None, plots=False)
        readme = files[self.t.root / "chapters/09_profiling/README.md"]
        self.assertIn("| 05 | BM_reduce |", readme)
        self.assertIn("No measured results are committed yet", results.block_re("ch09").search(readme).group(1))
        self.assertIn("| 05 | BM_reduce |", files[self.t.root / "docs/results/H200_roofline.md"])
        again = results.outputs(results.Tree(self.t.root), None, plots=False)
        self.assertEqual(files, again)

    def test_the_cli_rejects_an_unknown_gpu_with_status_2(self):
        import subprocess
        out = subprocess.run([sys.executable, str(ROOT / "chapters/09_profiling/tools/roofline.py"), "--gpu", "B999",
                              "--root", str(self.t.root)], capture_output=True, text=True)
        self.assertEqual(out.returncode, 2)
        self.assertIn("--gpu B999", out.stderr)


class Committed(unittest.TestCase):
    def test_the_committed_roofline_has_at_least_40_rows(self):
        r = roofline.join(ROOT, "H200")
        self.assertGreaterEqual(len(r["points"]), 40)
        self.assertEqual(len({(p["chapter"], p["name"]) for p in r["points"]}), len(r["points"]))


if __name__ == "__main__":
    unittest.main()
