#!/usr/bin/env python3
"""Unit tests of the chapter 1 cost calculator (no GPU): python3 scripts/test_ch01_cost.py"""
from __future__ import annotations

import io
import json
import sys
import tempfile
import unittest
from contextlib import redirect_stdout
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "chapters" / "01_serving_latency" / "tools"))
import ch01_cost as c  # noqa: E402


class Formulas(unittest.TestCase):
    def test_throughput_is_batch_over_latency(self):
        self.assertAlmostEqual(c.throughput_per_gpu(16, 250.0), 64000.0)
        self.assertAlmostEqual(c.throughput_per_gpu(1, 1e6), 1.0)
        self.assertAlmostEqual(c.throughput_per_gpu(4, 100.0, concurrent=3), 120000.0)

    def test_cost_per_million(self):
        # 1000 req/s for $3.60/h: 3.6M requests per hour -> $1 per million.
        self.assertAlmostEqual(c.cost_per_million(1000.0, 3.6), 1.0)
        self.assertAlmostEqual(c.cost_per_million(1000.0, 3.6, utilization=0.5), 2.0)

    def test_gpus_needed_rounds_up_but_not_on_exact_fits(self):
        self.assertEqual(c.gpus_needed(1000.0, 1000.0), 1)
        self.assertEqual(c.gpus_needed(1001.0, 1000.0), 2)
        self.assertEqual(c.gpus_needed(3000.0, 1000.0, utilization=0.5), 6)

    def test_bad_arguments_are_named(self):
        for call, name in [(lambda: c.throughput_per_gpu(0, 10.0), "batch"),
                           (lambda: c.throughput_per_gpu(1, 0.0), "latency_us"),
                           (lambda: c.throughput_per_gpu(1, 5.0, concurrent=0), "concurrent"),
                           (lambda: c.cost_per_million(-1.0, 3.0), "requests_per_s"),
                           (lambda: c.cost_per_million(10.0, float("nan")), "price_per_hour"),
                           (lambda: c.cost_per_million(10.0, 3.0, utilization=1.5), "utilization"),
                           (lambda: c.gpus_needed(10.0, 0.0), "rps_per_gpu")]:
            with self.assertRaises(ValueError) as e:
                call()
            self.assertIn(f"'{name}'", str(e.exception))


class FromBenchJson(unittest.TestCase):
    DATA = {"benchmarks": [
        {"name": "BM_block/graph/batch:1/manual_time", "label": "graph", "median_us": 50.0, "samples/s": 20000.0},
        {"name": "BM_block/eager/batch:1/manual_time", "label": "eager", "median_us": 200.0, "samples/s": 5000.0},
        {"name": "BM_block/fused/batch:1/manual_time", "error_occurred": True, "error_message": "wrong result"},
        {"name": "BM_block/eager/batch:1/manual_time_mean", "run_type": "aggregate", "samples/s": 1.0},
        {"name": "BM_other/1", "samples/s": 3.0},
    ]}

    def test_rows_skip_errors_aggregates_and_other_benchmarks(self):
        rows = c.rows_from_json(self.DATA)
        self.assertEqual([(r["mode"], r["batch"]) for r in rows], [("eager", 1), ("graph", 1)])

    def test_cli_prints_a_table(self):
        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / "ch01.json"
            f.write_text(json.dumps(self.DATA))
            out = io.StringIO()
            with redirect_stdout(out):
                self.assertEqual(c.main(["--price", "3.6", "--json", str(f), "--target-rps", "10000"]), 0)
        text = out.getvalue()
        self.assertIn("| 1 | eager | 200.0 | 5000 | 0.2000 | 2 |", text)
        self.assertIn("| 1 | graph | 50.0 | 20000 | 0.0500 | 1 |", text)

    def test_cli_by_hand(self):
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(c.main(["--price", "3.6", "--batch", "16", "--latency-us", "250"]), 0)
        self.assertIn("| 16 | given | 250.0 | 64000 |", out.getvalue())


if __name__ == "__main__":
    unittest.main()
